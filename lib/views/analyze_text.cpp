// The text report of `sp-opt analyze`: one screen per job; for BEFORE AFTER the changes first.
#include <algorithm>
#include <cstdio>

#include "views/analyze_views.h"
#include "views/describe.h"

namespace spopt {
namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}
std::string lpad(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}
std::string pct(double part, double whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", whole > 0 ? 100 * part / whole : 0.0);
  return buf;
}

void timeSection(std::string& out, const JobReport& r, const RankReport& rank, const AnalyzeViewOptions& o) {
  const RankTimeline* t = timelineOf(r, rank.rank);
  if (!r.simulated || !t) return;
  const RankTimeline* slow = r.timeline.slowest();
  out += "step " + humanSeconds(r.timeline.step_s) + " (slowest rank " + std::to_string(slow ? slow->rank : 0) +
         ")  compute " + humanSeconds(t->total.compute_s) + "  comm " + humanSeconds(t->total.comm_s) + "  exposed " +
         humanSeconds(t->total.exposed_s) + "  overlap " + formatMetric(Metric::Percent, t->overlapPercent()) + "\n";
  if (r.timeline.unpaired_collectives > 0)
    out += "(" + std::to_string(r.timeline.unpaired_collectives) +
           " collectives have member ranks the file lacks: they run when the ranks present reach them)\n";
  out += "\n" + pad("phase", 10) + lpad("span", 12) + lpad("compute", 12) + lpad("comm", 12) + lpad("exposed", 12) +
         lpad("FLOPs", 16) + lpad("wire bytes", 12) + "\n";
  for (size_t p = 0; p < kPhaseCount; ++p) {
    const PhaseTimes& ph = t->phases[p];
    if (ph.first_start < 0) continue;
    out += pad(phaseName(Phase(p)), 10) + lpad(humanSeconds(ph.span()), 12) + lpad(humanSeconds(ph.compute_s), 12) +
           lpad(humanSeconds(ph.comm_s), 12) + lpad(humanSeconds(ph.exposed_s), 12) +
           lpad(formatMetric(Metric::Flops, rank.flops_by_phase[p]), 16) +
           lpad(humanBytes(rank.comm_by_phase[p].wire), 12) + "\n";
  }
  auto groups = criticalPathGroups(r.timeline);
  out += "\ncritical path: " + std::to_string(r.timeline.critical_path.size()) + " ops; top items\n";
  for (size_t i = 0; i < groups.size() && i < o.top; ++i) {
    const PathGroup& g = groups[i];
    out += "  " + pad(g.type, 24) + pad(g.phase, 10) + lpad(std::to_string(g.count) + "x", 7) +
           lpad(humanSeconds(g.seconds), 12) + lpad(pct(g.seconds + g.wait_s, r.timeline.step_s), 6);
    if (g.wait_s > 0) out += "  (+" + humanSeconds(g.wait_s) + " waiting)";
    out += "\n";
  }
}

void commSection(std::string& out, const RankReport& rank) {
  out += "\ncommunication (rank " + std::to_string(rank.rank) + "): " + std::to_string(rank.comm.count) +
         " collectives, payload " + humanBytes(rank.comm.payload) + ", on the wire " + humanBytes(rank.comm.wire) +
         " (ring model)\n";
  if (rank.comm.count == 0) return;
  out += "  " + pad("", 18) + lpad("count", 7) + lpad("payload", 12) + lpad("wire", 12) + lpad("time", 12) + "\n";
  auto row = [&](const std::string& label, const CommTotals& c) {
    out += "  " + pad(label, 18) + lpad(std::to_string(c.count), 7) + lpad(humanBytes(c.payload), 12) +
           lpad(humanBytes(c.wire), 12) + lpad(humanSeconds(c.seconds), 12) + "\n";
  };
  for (auto& [k, c] : rank.comm_by_kind) row(collectiveKindName(k), c);
  for (auto& [ring, c] : rank.comm_by_ring) row("ring " + std::to_string(ring), c);
  for (size_t p = 0; p < kPhaseCount; ++p)
    if (rank.comm_by_phase[p].count) row(phaseName(Phase(p)), rank.comm_by_phase[p]);
  if (rank.unknown_size) out += "  (" + std::to_string(rank.unknown_size) + " collectives of unknown size left out)\n";
}

void memorySection(std::string& out, const RankReport& rank) {
  const MemoryProfile& m = rank.memory;
  out += "\nmemory (rank " + std::to_string(rank.rank) + "): peak " + humanBytes(m.peak_bytes);
  if (rank.peak_op) out += " at op " + std::to_string(m.peak_op) + " (" + std::string(rank.peak_op->type) + ")";
  out += ", persistable " + humanBytes(m.persistable_bytes) + "\n";
  if (!m.largest_at_peak.empty()) {
    out += "  largest live there:";
    for (size_t i = 0; i < m.largest_at_peak.size() && i < 3; ++i)
      out += std::string(i ? "," : "") + " " + std::string(m.largest_at_peak[i].first->name) + " " +
             humanBytes(m.largest_at_peak[i].second);
    out += "\n";
  }
}

void activationSection(std::string& out, const RankReport& rank, const AnalyzeViewOptions& o) {
  const ActivationReport& a = rank.activations;
  if (!a.has_backward) {
    out += "\nactivation memory: the job has no backward\n";
    return;
  }
  out += "\nactivation memory (rank " + std::to_string(rank.rank) + "): " + humanBytes(a.total_bytes) +
         " kept from forward for backward\n";
  size_t shown = 0;
  for (const LayerActivations& l : a.layers) {
    if (shown++ == o.top * 2) {
      out += "  ... " + std::to_string(a.layers.size() - o.top * 2) + " more layers\n";
      break;
    }
    std::vector<std::pair<int64_t, std::string>> ops;
    for (auto& [type, b] : l.by_op) ops.push_back({b, type});
    std::sort(ops.rbegin(), ops.rend());
    std::string top;
    for (size_t i = 0; i < ops.size() && i < 4; ++i) top += (i ? ", " : "") + ops[i].second + " " + humanBytes(ops[i].first);
    out += "  " + pad(l.layer, 12) + lpad(humanBytes(l.bytes), 12) + "  " + top + "\n";
  }
}

std::string header(const JobReport& r) {
  return r.path + ": " + std::to_string(r.ranks.size()) + " rank(s), model " + r.model.name + "\n";
}

// Ops outside the catalogue: which, how many, and their share of the FLOPs as costed.
void uncataloguedLine(std::string& out, const RankReport& rank) {
  if (rank.uncatalogued.empty()) return;
  int64_t count = 0;
  std::string types;
  for (const auto& [type, n] : rank.uncatalogued) {
    count += n;
    types += (types.empty() ? "" : ", ") + type + " x" + std::to_string(n);
  }
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", rank.flops > 0 ? 100.0 * rank.uncatalogued_flops / rank.flops : 0.0);
  out += "  not in the op catalogue, costed as one FLOP per output element: " + types + " (" + std::to_string(count) +
         " of " + std::to_string(rank.ops) + " ops, " + share + " of the FLOPs)\n";
}

}  // namespace

std::string renderAnalyzeText(const JobReport& r, const AnalyzeViewOptions& o) {
  std::string out = header(r);
  if (r.ranks.empty()) return out + "no programs\n";
  const RankReport& rank = detailRank(r, o);
  timeSection(out, r, rank, o);
  commSection(out, rank);
  out += "\ncompute (rank " + std::to_string(rank.rank) + "): " + formatMetric(Metric::Flops, rank.flops) + " in " +
         std::to_string(rank.ops) + " ops\n";
  uncataloguedLine(out, rank);
  memorySection(out, rank);
  activationSection(out, rank, o);
  if (r.ranks.size() > 1) {
    out += "\n" + pad("rank", 6) + lpad("end", 12) + lpad("compute", 12) + lpad("exposed", 12) + lpad("wire", 12) +
           lpad("peak", 12) + lpad("activations", 13) + "\n";
    for (const RankReport& rr : r.ranks) {
      const RankTimeline* t = timelineOf(r, rr.rank);
      out += pad(std::to_string(rr.rank), 6) + lpad(t ? humanSeconds(t->end_s) : "-", 12) +
             lpad(t ? humanSeconds(t->total.compute_s) : "-", 12) + lpad(t ? humanSeconds(t->total.exposed_s) : "-", 12) +
             lpad(humanBytes(rr.comm.wire), 12) + lpad(humanBytes(rr.memory.peak_bytes), 12) +
             lpad(humanBytes(rr.activations.total_bytes), 13) + "\n";
    }
  }
  return out;
}

std::string renderAnalyzeCompareText(const JobReport& before, const JobReport& after, const AnalyzeViewOptions& o) {
  std::string out = "before: " + header(before) + "after:  " + header(after) + "\n";
  out += pad("", 36) + lpad("before", 14) + lpad("after", 14) + lpad("change", 10) + "\n";
  auto b = headlineMetrics(before), a = headlineMetrics(after);
  for (const Metric& mb : b)
    for (const Metric& ma : a) {
      if (ma.key != mb.key) continue;
      std::string change = mb.value == ma.value ? "=" : mb.value == 0 ? "new" : [&] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (ma.value - mb.value) / mb.value);
        return std::string(buf);
      }();
      out += pad(mb.label, 36) + lpad(formatMetric(mb.unit, mb.value), 14) + lpad(formatMetric(ma.unit, ma.value), 14) +
             lpad(change, 10) + "\n";
    }
  out += "\n== before\n" + renderAnalyzeText(before, o) + "\n== after\n" + renderAnalyzeText(after, o);
  return out;
}

}  // namespace spopt
