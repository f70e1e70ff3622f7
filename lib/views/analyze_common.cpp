// Pieces every analyze view shares: headline metrics, units, the rank to detail.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "views/analyze_views.h"
#include "views/describe.h"

namespace spopt {

std::string humanSeconds(double s) {
  char buf[32];
  if (s == 0) return "0";
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else if (s >= 1e-6) std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f ns", s * 1e9);
  return buf;
}

std::string formatMetric(Metric::Unit unit, double v) {
  char buf[48];
  switch (unit) {
    case Metric::Seconds: return humanSeconds(v);
    case Metric::Bytes: return humanBytes(int64_t(std::llround(v)));
    case Metric::Flops:
      if (v >= 1e12) std::snprintf(buf, sizeof buf, "%.2f TFLOP", v / 1e12);
      else if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GFLOP", v / 1e9);
      else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2f MFLOP", v / 1e6);
      else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.2f kFLOP", v / 1e3);
      else std::snprintf(buf, sizeof buf, "%.0f FLOP", v);
      return buf;
    case Metric::Percent: std::snprintf(buf, sizeof buf, "%.1f%%", v); return buf;
    case Metric::Count: std::snprintf(buf, sizeof buf, "%.0f", v); return buf;
  }
  return "";
}

const RankTimeline* timelineOf(const JobReport& r, int64_t rank) {
  for (const RankTimeline& t : r.timeline.ranks)
    if (t.rank == rank) return &t;
  return nullptr;
}

const RankReport& detailRank(const JobReport& r, const AnalyzeViewOptions& o) {
  for (const RankReport& rr : r.ranks)
    if (rr.rank == o.rank) return rr;
  if (r.simulated)
    if (const RankTimeline* s = r.timeline.slowest())
      for (const RankReport& rr : r.ranks)
        if (rr.rank == s->rank) return rr;
  return r.ranks.front();
}

std::vector<Metric> headlineMetrics(const JobReport& r) {
  std::vector<Metric> m;
  auto maxOver = [&](auto f) {
    double v = 0;
    for (const RankReport& rr : r.ranks) v = std::max(v, double(f(rr)));
    return v;
  };
  if (r.simulated) {
    const RankTimeline* s = r.timeline.slowest();
    m.push_back({"step_s", "step time", Metric::Seconds, r.timeline.step_s});
    if (s) {
      m.push_back({"compute_s", "compute (slowest rank)", Metric::Seconds, s->total.compute_s});
      m.push_back({"comm_s", "communication", Metric::Seconds, s->total.comm_s});
      m.push_back({"exposed_comm_s", "exposed communication", Metric::Seconds, s->total.exposed_s});
      m.push_back({"overlap_pct", "overlap", Metric::Percent, s->overlapPercent()});
      m.push_back({"forward_s", "forward span", Metric::Seconds, s->phases[size_t(Phase::Forward)].span()});
      m.push_back({"backward_s", "backward span", Metric::Seconds, s->phases[size_t(Phase::Backward)].span()});
      m.push_back({"optimize_s", "optimizer span", Metric::Seconds, s->phases[size_t(Phase::Optimize)].span()});
    }
  }
  m.push_back({"flops_per_rank", "FLOPs per rank (max)", Metric::Flops, maxOver([](auto& x) { return x.flops; })});
  m.push_back({"collectives_per_rank", "collectives per rank (max)", Metric::Count,
               maxOver([](auto& x) { return x.comm.count; })});
  m.push_back({"payload_bytes_per_rank", "payload per rank (max)", Metric::Bytes,
               maxOver([](auto& x) { return x.comm.payload; })});
  m.push_back({"wire_bytes_per_rank", "wire bytes per rank (max)", Metric::Bytes,
               maxOver([](auto& x) { return x.comm.wire; })});
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter, CollectiveKind::AllGather}) {
    double v = maxOver([k](const RankReport& x) {
      auto it = x.comm_by_kind.find(k);
      return it == x.comm_by_kind.end() ? int64_t(0) : it->second.wire;
    });
    std::string key = std::string("wire_bytes_") + collectiveKindName(k);
    std::replace(key.begin(), key.end(), '-', '_');
    m.push_back({key, std::string("  ") + collectiveKindName(k),
                 Metric::Bytes, v});
  }
  m.push_back({"peak_bytes_per_rank", "peak memory per rank (max)", Metric::Bytes,
               maxOver([](auto& x) { return x.memory.peak_bytes; })});
  m.push_back({"activation_bytes_per_rank", "activation memory per rank (max)", Metric::Bytes,
               maxOver([](auto& x) { return x.activations.total_bytes; })});
  return m;
}

std::vector<PathGroup> criticalPathGroups(const StepTimeline& t) {
  std::map<std::pair<std::string, std::string>, PathGroup> groups;
  for (const CriticalItem& c : t.critical_path) {
    std::string type(c.op->type), phase = phaseName(phaseOf(*c.op));
    PathGroup& g = groups[{type, phase}];
    g.type = type;
    g.phase = phase;
    ++g.count;
    g.seconds += c.seconds;
    g.wait_s += c.wait_s;
  }
  std::vector<PathGroup> out;
  for (auto& [k, g] : groups) out.push_back(g);
  std::stable_sort(out.begin(), out.end(),
                   [](const PathGroup& a, const PathGroup& b) { return a.seconds + a.wait_s > b.seconds + b.wait_s; });
  return out;
}

}  // namespace spopt
