// `sp-opt analyze --format html`: one self-contained page (inline CSS and SVG, no script) with the
// headline figures (side by side for BEFORE AFTER, the changes first), the simulated timeline of
// every rank and stream, and the per-rank memory curve over the op order.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "views/analyze_views.h"
#include "views/describe.h"
#include "views/html_page.h"

namespace spopt {
namespace {

// Fill colours; tests/scripts/analyze_html.sh counts their pixels.
constexpr const char* kForwardFill = "#4a90d9";
constexpr const char* kBackwardFill = "#e8913a";
constexpr const char* kOptimizeFill = "#5cb85c";
constexpr const char* kCommFill = "#c0392b";
constexpr const char* kOtherFill = "#999999";
constexpr const char* kMemoryStroke = "#7b3fb3";

const char* fillOf(const Op& op) {
  if (auto c = asCollective(op); c && communicates(*c)) return kCommFill;
  switch (phaseOf(op)) {
    case Phase::Forward:
    case Phase::Loss: return kForwardFill;
    case Phase::Backward:
    case Phase::LossGrad: return kBackwardFill;
    case Phase::Optimize: return kOptimizeFill;
    default: return kOtherFill;
  }
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// One row per rank and stream. Neighbouring intervals of one colour closer than half a pixel
// merge into one rect, so a million ops draw as at most a few thousand rects per row.
std::string timelineSvg(const JobReport& r) {
  const double label_w = 150, width = 1000, row_h = 16;
  double step = r.timeline.step_s > 0 ? r.timeline.step_s : 1;
  size_t rows = 0;
  for (const RankTimeline& t : r.timeline.ranks) rows += t.streams.size();
  double height = double(rows) * row_h + 24;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(label_w + width + 10) + "\" height=\"" +
                    num(height) + "\" font-size=\"11\" font-family=\"monospace\">\n";
  double y = 0;
  for (const RankTimeline& t : r.timeline.ranks)
    for (const StreamTimeline& s : t.streams) {
      svg += "<text x=\"0\" y=\"" + num(y + 12) + "\">rank " + std::to_string(t.rank) + " " + escapeHtml(s.name) + "</text>\n";
      svg += "<rect x=\"" + num(label_w) + "\" y=\"" + num(y + 1) + "\" width=\"" + num(width) + "\" height=\"" +
             num(row_h - 2) + "\" fill=\"#f4f4f4\"/>\n";
      const char* cur = nullptr;
      double x0 = 0, x1 = 0;
      auto flush = [&] {
        if (!cur) return;
        svg += "<rect x=\"" + num(label_w + x0) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(std::max(x1 - x0, 0.6)) +
               "\" height=\"" + num(row_h - 4) + "\" fill=\"" + cur + "\"/>\n";
      };
      for (const SimInterval& iv : s.intervals) {
        if (iv.end <= iv.start) continue;
        const char* fill = fillOf(*iv.op);
        double a = iv.start / step * width, b = iv.end / step * width;
        if (cur == fill && a - x1 < 0.5) {
          x1 = std::max(x1, b);
          continue;
        }
        flush();
        cur = fill;
        x0 = a;
        x1 = b;
      }
      flush();
      y += row_h;
    }
  for (int i = 0; i <= 4; ++i) {
    double x = label_w + width * i / 4;
    svg += "<text x=\"" + num(i == 4 ? x - 60 : x) + "\" y=\"" + num(y + 16) + "\">" + escapeHtml(humanSeconds(step * i / 4)) +
           "</text>\n";
  }
  return svg + "</svg>\n";
}

// Bytes live while each op of the entry block runs, one curve per rank over the op order; a
// bucket of ops draws its maximum, so the peak survives downsampling.
std::string memorySvg(const JobReport& r) {
  const double label_w = 90, width = 1000, height = 220;
  int64_t peak = 1;
  size_t longest = 1;
  for (const RankReport& rr : r.ranks) {
    peak = std::max(peak, rr.memory.peak_bytes);
    longest = std::max(longest, rr.memory.live_at.size());
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(label_w + width + 10) + "\" height=\"" +
                    num(height + 24) + "\" font-size=\"11\" font-family=\"monospace\">\n";
  svg += "<rect x=\"" + num(label_w) + "\" y=\"0\" width=\"" + num(width) + "\" height=\"" + num(height) +
         "\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n";
  svg += "<text x=\"0\" y=\"12\">" + escapeHtml(humanBytes(peak)) + "</text><text x=\"0\" y=\"" + num(height) +
         "\">0</text>\n";
  const size_t buckets = 1000;
  for (const RankReport& rr : r.ranks) {
    const auto& live = rr.memory.live_at;
    if (live.empty()) continue;
    std::string points;
    size_t per = std::max<size_t>(1, (live.size() + buckets - 1) / buckets);
    for (size_t i = 0; i < live.size(); i += per) {
      int64_t v = 0;
      for (size_t j = i; j < std::min(live.size(), i + per); ++j) v = std::max(v, live[j]);
      double x = label_w + width * double(i) / double(longest), y = height - height * double(v) / double(peak);
      points += num(x) + "," + num(y) + " ";
    }
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(kMemoryStroke) + "\" stroke-width=\"3\" points=\"" + points +
           "\"><title>rank " + std::to_string(rr.rank) + "</title></polyline>\n";
  }
  svg += "<text x=\"" + num(label_w) + "\" y=\"" + num(height + 16) + "\">op 0</text><text x=\"" +
         num(label_w + width - 60) + "\" y=\"" + num(height + 16) + "\">op " + std::to_string(longest) + "</text>\n";
  return svg + "</svg>\n";
}

std::string legend() {
  std::string out = "<p class=\"legend\">";
  for (auto [fill, label] : {std::pair{kForwardFill, "forward"}, {kBackwardFill, "backward"},
                             {kOptimizeFill, "optimizer"}, {kCommFill, "collective"}})
    out += std::string("<span><i style=\"background:") + fill + ";border-color:" + fill + "\"></i>" + label + "</span>";
  return out + "</p>\n";
}

std::string headlineTable(const std::vector<const JobReport*>& reports) {
  std::vector<std::vector<Metric>> ms;
  for (const JobReport* r : reports) ms.push_back(headlineMetrics(*r));
  bool compare = reports.size() == 2;
  std::string out = "<table class=\"headline\"><tr><th></th>";
  out += compare ? "<th>before</th><th>after</th><th>change</th>" : "<th>value</th>";
  out += "</tr>\n";
  for (const Metric& m : ms[0]) {
    out += "<tr><td>" + escapeHtml(m.label) + "</td><td class=\"num\">" + escapeHtml(formatMetric(m.unit, m.value)) + "</td>";
    if (compare) {
      for (const Metric& a : ms[1])
        if (a.key == m.key) {
          std::string cls = a.value > m.value ? "up" : a.value < m.value ? "down" : "";
          char buf[24];
          if (m.value == a.value) std::snprintf(buf, sizeof buf, "=");
          else if (m.value == 0) std::snprintf(buf, sizeof buf, "new");
          else std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (a.value - m.value) / m.value);
          out += "<td class=\"num\">" + escapeHtml(formatMetric(a.unit, a.value)) + "</td><td class=\"num " + cls + "\">" +
                 buf + "</td>";
        }
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string activationTable(const RankReport& rank) {
  std::string out = "<table><tr><th>layer</th><th>kept for backward</th><th>by producing op</th></tr>\n";
  for (const LayerActivations& l : rank.activations.layers) {
    std::string ops;
    for (auto& [type, b] : l.by_op) ops += (ops.empty() ? "" : ", ") + type + " " + humanBytes(b);
    out += "<tr><td>" + escapeHtml(l.layer) + "</td><td class=\"num\">" + humanBytes(l.bytes) + "</td><td>" +
           escapeHtml(ops) + "</td></tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string renderAnalyzeHtml(const std::vector<const JobReport*>& reports, const AnalyzeViewOptions& o) {
  std::string title = "sp-opt analyze: " + reports[0]->path + (reports.size() == 2 ? " -> " + reports[1]->path : "");
  std::string out = htmlHead(title);
  out += "<h1>" + escapeHtml(title) + "</h1>\n<p class=\"files\">model " + escapeHtml(reports[0]->model.name) + ": " +
         escapeHtml(reports[0]->model.source) + "</p>\n";
  out += "<h2>Summary</h2>\n" + headlineTable(reports);
  for (size_t i = 0; i < reports.size(); ++i) {
    const JobReport& r = *reports[i];
    std::string which = reports.size() == 2 ? (i == 0 ? "Before: " : "After: ") : "";
    if (r.simulated) {
      out += "<h2>" + which + "Simulated step timeline</h2>\n" + legend();
      out += "<div class=\"graph timeline\">\n" + timelineSvg(r) + "</div>\n";
    }
    out += "<h2>" + which + "Memory live over the op order, every rank</h2>\n";
    out += "<div class=\"graph memory\">\n" + memorySvg(r) + "</div>\n";
    const RankReport& rank = detailRank(r, o);
    out += "<h2>" + which + "Activation memory, rank " + std::to_string(rank.rank) + "</h2>\n" + activationTable(rank);
  }
  return out + htmlTail();
}

}  // namespace spopt
