// `sp-opt analyze --format json` and `--trace`. Keys are stable (docs/analyze.md lists them);
// times in seconds, sizes in bytes.
#include <cmath>
#include <map>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "analysis/p2p.h"
#include "analysis/simulate.h"
#include "views/analyze_views.h"
#include "ir/json_pointer.h"
#include "views/describe.h"

namespace spopt {
namespace {

using Json = nlohmann::ordered_json;

// Trace times in microseconds, to the nanosecond: shorter files, stable digits.
double micros(double seconds) { return std::round(seconds * 1e9) / 1e3; }

Json commJson(const CommTotals& c) {
  return Json{{"count", c.count}, {"payload_bytes", c.payload}, {"wire_bytes", c.wire}, {"seconds", c.seconds}};
}

Json phasesJson(const RankTimeline& t) {
  Json j = Json::object();
  for (size_t p = 0; p < kPhaseCount; ++p) {
    const PhaseTimes& ph = t.phases[p];
    if (ph.first_start < 0) continue;
    j[phaseName(Phase(p))] = Json{{"span_s", ph.span()},
                                  {"compute_s", ph.compute_s},
                                  {"comm_s", ph.comm_s},
                                  {"exposed_comm_s", ph.exposed_s}};
  }
  return j;
}

Json rankJson(const RankReport& r) {
  Json j{{"rank", r.rank}, {"ops", r.ops}, {"flops", r.flops}};
  if (!r.uncatalogued.empty()) j["uncatalogued"] = {{"ops", r.uncatalogued}, {"flops", r.uncatalogued_flops}};
  Json fp = Json::object(), fl = Json::object();
  for (size_t p = 0; p < kPhaseCount; ++p)
    if (r.flops_by_phase[p] > 0) fp[phaseName(Phase(p))] = r.flops_by_phase[p];
  for (auto& [layer, f] : r.flops_by_layer) fl[layer] = f;
  j["flops_by_phase"] = fp;
  j["flops_by_layer"] = fl;
  Json comm = commJson(r.comm);
  comm["unknown_size"] = r.unknown_size;
  Json kinds = Json::object(), rings = Json::object(), phases = Json::object();
  for (auto& [k, c] : r.comm_by_kind) kinds[collectiveKindName(k)] = commJson(c);
  for (auto& [ring, c] : r.comm_by_ring) rings[std::to_string(ring)] = commJson(c);
  for (size_t p = 0; p < kPhaseCount; ++p)
    if (r.comm_by_phase[p].count) phases[phaseName(Phase(p))] = commJson(r.comm_by_phase[p]);
  comm["by_kind"] = kinds;
  comm["by_ring"] = rings;
  comm["by_phase"] = phases;
  Json list = Json::array();
  for (const CollectiveUse& u : r.collectives)
    list.push_back(Json{{"op", opPointerAt(*u.op, u.position)},
                        {"type", std::string(u.op->type)},
                        {"kind", collectiveKindName(u.kind)},
                        {"ring", u.ring},
                        {"group_size", u.group_size},
                        {"phase", phaseName(u.phase)},
                        {"layer", u.layer},
                        {"payload_bytes", u.payload},
                        {"wire_bytes", u.wire},
                        {"seconds", u.seconds}});
  comm["collectives"] = list;
  j["comm"] = comm;
  const MemoryProfile& m = r.memory;
  Json largest = Json::array();
  for (auto& [v, b] : m.largest_at_peak) largest.push_back(Json{{"var", std::string(v->name)}, {"bytes", b}});
  j["memory"] = Json{{"peak_bytes", m.peak_bytes},
                     {"peak_op", m.peak_op},
                     {"peak_op_type", r.peak_op ? Json(std::string(r.peak_op->type)) : Json(nullptr)},
                     {"persistable_bytes", m.persistable_bytes},
                     {"largest_at_peak", largest},
                     {"unknown_size_vars", m.unknown_size.size()}};
  const ActivationReport& a = r.activations;
  Json layers = Json::array();
  for (const LayerActivations& l : a.layers) {
    Json by_op = Json::object();
    for (auto& [type, b] : l.by_op) by_op[type] = b;
    layers.push_back(Json{{"layer", l.layer}, {"bytes", l.bytes}, {"by_op", by_op}});
  }
  j["activations"] = Json{{"has_backward", a.has_backward}, {"total_bytes", a.total_bytes}, {"layers", layers}};
  return j;
}

Json modelJson(const HardwareModel& m) {
  Json flops = Json::object();
  for (DType t : {DType::BFloat16, DType::Float16, DType::Float32, DType::Float64})
    flops[std::string(dtypeName(t))] = m.flopsFor(t);
  return Json{{"name", m.name},       {"flops_per_s", flops},        {"mem_bw", m.mem_bw},
              {"bus_bw", m.bus_bw},   {"latency_s", m.latency_s},    {"step_latency_s", m.step_latency_s},
              {"op_overhead_s", m.op_overhead_s}, {"source", m.source}};
}

Json reportJson(const JobReport& r) {
  Json j{{"job", r.path}, {"world_size", r.world_size}, {"model", modelJson(r.model)}};
  Json headline = Json::object();
  for (const Metric& m : headlineMetrics(r)) headline[m.key] = m.value;
  j["summary"] = headline;
  if (r.simulated) {
    Json ranks = Json::array();
    for (const RankTimeline& t : r.timeline.ranks)
      ranks.push_back(Json{{"rank", t.rank},
                           {"end_s", t.end_s},
                           {"compute_s", t.total.compute_s},
                           {"comm_s", t.total.comm_s},
                           {"exposed_comm_s", t.total.exposed_s},
                           {"overlap_pct", t.overlapPercent()},
                           {"phases", phasesJson(t)}});
    Json top = Json::array();
    for (const PathGroup& g : criticalPathGroups(r.timeline))
      top.push_back(Json{{"type", g.type}, {"phase", g.phase}, {"count", g.count}, {"seconds", g.seconds}, {"wait_s", g.wait_s}});
    j["step"] = Json{{"step_s", r.timeline.step_s},
                     {"unpaired_collectives", r.timeline.unpaired_collectives},
                     {"ranks", ranks},
                     {"critical_path", Json{{"ops", r.timeline.critical_path.size()}, {"by_type", top}}}};
  }
  Json ranks = Json::array();
  for (const RankReport& rr : r.ranks) ranks.push_back(rankJson(rr));
  j["ranks"] = ranks;
  return j;
}

}  // namespace

std::string renderAnalyzeJson(const JobReport& r) {
  Json j{{"format", "sp-opt.analyze"}, {"version", 1}};
  j.update(reportJson(r));
  return j.dump(1) + "\n";
}

std::string renderAnalyzeCompareJson(const JobReport& before, const JobReport& after) {
  Json change = Json::object();
  auto b = headlineMetrics(before), a = headlineMetrics(after);
  for (const Metric& mb : b)
    for (const Metric& ma : a)
      if (ma.key == mb.key) change[mb.key] = Json{{"before", mb.value}, {"after", ma.value}, {"delta", ma.value - mb.value}};
  Json j{{"format", "sp-opt.analyze-compare"}, {"version", 1}, {"change", change}};
  j["before"] = reportJson(before);
  j["after"] = reportJson(after);
  return j.dump(1) + "\n";
}

std::string renderAnalyzeTrace(const JobReport& r) {
  Json events = Json::array();
  // Collective #k of a ring: where its first member ran it, the start of the arrows to the others.
  struct FlowEnd {
    double ts;
    int64_t pid;
    size_t tid;
  };
  std::map<std::pair<int64_t, int64_t>, FlowEnd> flow_first;
  int64_t next_flow = 0;
  for (const RankTimeline& t : r.timeline.ranks) {
    events.push_back(Json{{"name", "process_name"}, {"ph", "M"}, {"pid", t.rank}, {"args", {{"name", "rank " + std::to_string(t.rank)}}}});
    for (size_t s = 0; s < t.streams.size(); ++s) {
      const StreamTimeline& st = t.streams[s];
      events.push_back(Json{{"name", "thread_name"}, {"ph", "M"}, {"pid", t.rank}, {"tid", s}, {"args", {{"name", st.name}}}});
      for (const SimInterval& iv : st.intervals) {
        if (iv.end <= iv.start) continue;
        double ts = micros(iv.start), dur = micros(iv.end - iv.start);
        Json e{{"name", std::string(iv.op->type)}, {"cat", phaseName(phaseOf(*iv.op))}, {"ph", "X"}, {"ts", ts},
               {"dur", dur}, {"pid", t.rank}, {"tid", s}, {"args", {{"op", opPointerAt(*iv.op, iv.position)}}}};
        // A communicating collective or a send / receive names its ring, as replay's trace does
        // (compare-traces.py pairs a ring's k-th op across ranks by it, and counts it as the link's).
        if (auto c = asCollective(*iv.op); c && communicates(*c)) e["args"]["ring"] = c->ring_id;
        else if (auto p = asPointToPoint(*iv.op); p && p->ring_id >= 0) e["args"]["ring"] = p->ring_id;
        events.push_back(e);
      }
    }
    // The k-th collective of a ring on each rank (its issue order) is one flow across ranks.
    std::unordered_map<const Op*, std::pair<const SimInterval*, size_t>> where;
    const Program* program = nullptr;
    for (size_t s = 0; s < t.streams.size(); ++s)
      for (const SimInterval& iv : t.streams[s].intervals) {
        program = iv.op->block->program;
        if (auto c = asCollective(*iv.op); c && communicates(*c)) where[iv.op] = {&iv, s};
      }
    if (!program) continue;
    for (auto& [ring, ops] : collectivesByRing(*program))
      for (size_t k = 0; k < ops.size(); ++k) {
        auto w = where.find(ops[k]);
        if (w == where.end()) continue;
        // One arrow from the ring's first member to each other member (a flow is one start, one end).
        double ts = micros(w->second.first->start);
        auto [it, first] = flow_first.try_emplace({ring, int64_t(k)}, FlowEnd{ts, t.rank, w->second.second});
        if (first) continue;
        const FlowEnd& from = it->second;
        std::string cat = "ring " + std::to_string(ring);
        events.push_back(Json{{"name", "collective"}, {"cat", cat}, {"ph", "s"}, {"id", next_flow}, {"ts", from.ts},
                              {"pid", from.pid}, {"tid", from.tid}});
        events.push_back(Json{{"name", "collective"}, {"cat", cat}, {"ph", "f"}, {"bp", "e"}, {"id", next_flow},
                              {"ts", ts}, {"pid", t.rank}, {"tid", w->second.second}});
        ++next_flow;
      }
  }
  Json j{{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", {{"model", r.model.name}, {"step_s", r.timeline.step_s}}}};
  return j.dump() + "\n";
}

}  // namespace spopt
