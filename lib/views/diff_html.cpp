#include "views/diff_html.h"

#include <map>

#include "views/diff_text.h"
#include "views/graphviz.h"
#include "views/html_page.h"

namespace spopt {

std::string renderDiffHtml(const JobDiff& diff, const RankDiff& drawn, const std::string& dot) {
  std::string svg = inlineSvg(dotToSvg(dot));
  std::string title = "sp-opt diff: " + diff.before->path + " \u2192 " + diff.after->path;
  std::string out = htmlHead(title);
  out += "<h1>sp-opt diff <span class=\"verdict " + std::string(diff.same() ? "same\">same" : "differ\">different") +
         "</span></h1>\n";
  out += "<p class=\"files\">\u2212 " + escapeHtml(diff.before->path) + "<br>+ " + escapeHtml(diff.after->path) + "</p>\n";
  out += "<ul class=\"summary\">\n";
  for (const RankDiff& r : diff.ranks) {
    std::string s = summarizeCounts(r.countsByType());
    if (s.empty()) s = r.same() ? "no changes" : "vars or program keys changed";
    out += "<li>rank " + std::to_string(r.rank) + ": " + escapeHtml(s) + "</li>\n";
  }
  out += "</ul>\n";

  out += "<h2>Rank " + std::to_string(drawn.rank) + " data flow</h2>\n" + graphLegend(true);
  out += "<div class=\"graph\">\n" + svg + "</div>\n";

  out += "<h2>Collectives and bytes moved per rank" + std::string(diff.bus_factors ? " (bus factors)" : "") + "</h2>\n";
  std::vector<CommRow> rows;
  for (const RankDiff& r : diff.ranks) rows.push_back({"rank " + std::to_string(r.rank), r.comm_before, r.comm_after});
  out += commTable(rows, true);

  out += "<h2>Changes</h2>\n<pre class=\"changes\">";
  out += renderDiffText(diff, TextStyle{false, true});
  out += "</pre>\n";
  return out + htmlTail();
}

std::string renderGraphHtml(const Program& p, const std::string& dot, const std::string& title, bool bus_factors) {
  std::string svg = inlineSvg(dotToSvg(dot));
  std::string out = htmlHead(title);
  out += "<h1>" + escapeHtml(title) + "</h1>\n" + graphLegend(false);
  out += "<div class=\"graph\">\n" + svg + "</div>\n";

  // Per ring: how much this rank communicates on it.
  std::map<int64_t, CommStats> by_ring;
  for (const auto& [ring, ops] : collectivesByRing(p)) {
    CommStats& s = by_ring[ring];
    for (const Op* op : ops) {
      auto c = asCollective(*op);
      ++s.count;
      ++s.by_kind[c->kind];
      if (auto bytes = collectiveBytes(*op, *c, *p.job, bus_factors)) s.bytes += *bytes;
      else ++s.unknown_size;
    }
  }
  std::vector<CommRow> rows(by_ring.size() + 1);
  size_t i = 0;
  for (const auto& [ring, s] : by_ring) {
    rows[i].label = "ring " + std::to_string(ring);
    rows[i++].after = s;
  }
  rows[i].label = "all rings";
  rows[i].after = commStats(p, bus_factors);
  out += "<h2>Collectives and bytes moved" + std::string(bus_factors ? " (bus factors)" : "") + "</h2>\n";
  out += commTable(rows, false);
  return out + htmlTail();
}

}  // namespace spopt
