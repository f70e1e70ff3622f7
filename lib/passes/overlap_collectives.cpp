// Pass overlap-collectives: hide backward communication behind compute. Per rank, in each run of
// backward and optimizer ops (phases=backward+optimize, the default), of backward ops only
// (phases=backward) or of all ops (phases=all) of the entry block:
//  1. split every matmul_v2_grad into its dX and dW GEMMs (matmul_grad_split.h), when the run has
//     a collective: the dX GEMM feeds a collective, the dW GEMM can fill its flight time;
//  2. reorder the run with a list scheduler against the analyze cost model (overlap_schedule.cpp):
//     collectives as early as their inputs allow, independent work during their flight, their
//     consumers as late as possible; never two collectives of one ring relative to each other;
//  3. if the program's peak memory (analysis/memory.h) rose by more than memory-cap, reschedule
//     with a window four times smaller (down to the original order);
//  4. put each ring's collectives on stream comm_ring_<id> (overlap_streams.cpp).
// Then the whole job is checked: each ring's collective order must be identical on every member
// rank (RingOrder::checkOrder; by construction it is, as each ring's chain is kept) and the ranks
// must still be able to reach every collective across rings (simulateStep finds cycles); otherwise
// every program goes back to its original order and --explain says why.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <absl/container/flat_hash_map.h>

#include "analysis/memory.h"
#include "analysis/ring_order.h"
#include "analysis/simulate.h"
#include "ir/op_role.h"
#include "passes/builtin_passes.h"
#include "passes/matmul_grad_split.h"
#include "passes/overlap_support.h"
#include "support/error.h"

namespace spopt {
namespace {

std::string us(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  return b;
}

std::string fraction(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", f);
  return b;
}

class OverlapCollectives final : public Pass {
 public:
  struct Options {
    int64_t max_in_flight = 4;
    double memory_cap = 0.05;
    std::string phases = "backward+optimize";
    std::string preset = "h100-nvlink";
    int64_t window = 512;
    bool split_grads = true;
  };
  explicit OverlapCollectives(Options o) : opts_(std::move(o)) {}

  bool run(Job& job, PassContext& ctx) override {
    auto model = presetModel(opts_.preset);
    if (!model) throw InputError("--passes", "", "overlap-collectives: unknown preset \"" + opts_.preset + "\"");
    const RegionPhases phases = *regionPhasesNamed(opts_.phases);  // the option's choices are its names
    RingOrder ring_before(job);
    StepTimeline sim_before = simulate(job, *model);
    bool changed = false;
    struct Placed {
      std::vector<Op*> original, now;
    };
    std::vector<std::vector<Placed>> placed(job.programs.size());
    std::vector<CollectiveOutcome> outcomes;
    std::vector<std::pair<const Program*, std::vector<uint32_t>>> input_pos;  // for explain records
    std::vector<bool> memory_limited(job.programs.size(), false);
    peak_before_.assign(job.programs.size(), 0);
    peak_after_.assign(job.programs.size(), 0);
    for (auto& p : job.programs) {
      if (p->blocks.empty()) continue;
      Block& entry = *p->blocks.front();
      auto regions = scheduleRegions(entry, phases);
      bool has_comm = false;
      for (auto& r : regions)
        for (Op* op : r) has_comm = has_comm || commCollective(*op).has_value();
      if (!has_comm) continue;
      std::vector<uint32_t> pos(p->next_op_id, 0);
      for (Op& op : entry.ops) pos[op.id] = uint32_t(entry.indexOf(&op));
      int64_t peak_before = profileMemory(*p, 0).peak_bytes;
      int64_t& peak_after = peak_after_[p->position];
      if (opts_.split_grads) {
        size_t split = 0;
        for (auto& r : regions)
          for (Op* op : r)
            if (matmulGradSplitRefusal(*op).empty()) splitMatmulGrad(job, *op), ++split;
        if (split) {
          changed = true;
          ctx.stats.notes["matmul-grad-split"] += split;
          regions = scheduleRegions(entry, phases);
        }
      }
      std::vector<std::vector<double>> costs;
      for (auto& r : regions) {
        costs.emplace_back();
        for (Op* op : r) costs.back().push_back(opCostSeconds(*op, *model));
      }
      size_t window = opts_.window < 0 ? SIZE_MAX / 2 : size_t(opts_.window);
      std::vector<CollectiveOutcome> mine;
      absl::flat_hash_map<const Op*, CollectiveOutcome> first;  // under the first (widest) window
      for (;;) {
        mine.clear();
        auto& pl = placed[p->position];
        pl.clear();
        for (size_t i = 0; i < regions.size(); ++i) {
          RegionSchedule s = scheduleRegion(regions[i], costs[i], {opts_.max_in_flight, window});
          applyOrder(regions[i], s.order);
          pl.push_back({regions[i], s.order});
          mine.insert(mine.end(), s.collectives.begin(), s.collectives.end());
        }
        if (first.empty())
          for (const CollectiveOutcome& c : mine) first[c.op] = c;
        int64_t peak = profileMemory(*p, 0).peak_bytes;
        peak_after = peak;
        peak_before_[p->position] = peak_before;
        if (window == 0 || double(peak) <= double(peak_before) * (1 + opts_.memory_cap)) break;
        for (auto& x : pl) applyOrder(x.now, x.original);
        memory_limited[p->position] = true;
        window /= 4;
      }
      // A collective more exposed under the smaller window than under the first is the memory
      // cap's doing; one exposed as much under the first keeps the first schedule's reason.
      if (memory_limited[p->position])
        for (auto& c : mine) {
          if (c.limit == Limit::None) continue;
          auto it = first.find(c.op);
          bool as_exposed = it != first.end() && it->second.limit != Limit::None && c.exposed_s <= it->second.exposed_s * 1.001;
          c.limit = as_exposed ? it->second.limit : Limit::MemoryCap;
        }
      outcomes.insert(outcomes.end(), mine.begin(), mine.end());
      input_pos.emplace_back(p.get(), std::move(pos));
    }

    std::string revert_code, revert_why = orderProblem(job, ring_before);
    if (!revert_why.empty()) revert_code = "ring-order";
    std::vector<std::vector<Op*>> regions_all;
    for (auto& pl : placed)
      for (auto& x : pl) regions_all.push_back(x.now);
    // Streams first: the simulation after the pass must see the comm streams.
    auto [moved, events] = assignCommStreams(job, regions_all);
    StepTimeline sim_after;
    if (revert_why.empty()) {
      try {
        sim_after = simulateStep(job, *model);
      } catch (const InputError& e) {
        revert_code = "cross-ring-order";
        revert_why = std::string("the new orders would deadlock across rings: ") + e.what();
      }
    }
    if (!revert_why.empty()) {
      for (auto& pl : placed)
        for (auto& x : pl) applyOrder(x.now, x.original);
      sim_after = simulate(job, *model);
    }
    for (auto& pl : placed)
      for (auto& x : pl) changed = changed || x.now != x.original;
    changed = changed || moved > 0 || events > 0;
    if (events) ctx.stats.notes["inplace-event"] += events;
    report(ctx, outcomes, input_pos, revert_code, revert_why);
    figures(ctx, sim_before, sim_after);
    if (!outcomes.empty()) {  // the worst rank's peak (analysis/memory.h), of the programs scheduled
      ctx.stats.figures["peak_bytes_before"] = *std::max_element(peak_before_.begin(), peak_before_.end());
      ctx.stats.figures["peak_bytes_after"] = *std::max_element(peak_after_.begin(), peak_after_.end());
    }
    return changed;
  }

 private:
  Options opts_;
  std::vector<int64_t> peak_before_, peak_after_;  // [program position]: peak bytes (0: not scheduled)

  static StepTimeline simulate(const Job& job, const HardwareModel& m) {
    try {
      return simulateStep(job, m);
    } catch (const InputError&) {
      return {};
    }
  }

  // "" when every ring's collective order is identical on its members, else why not.
  static std::string orderProblem(const Job& job, const RingOrder& before) {
    RingOrder after(job);
    for (const Ring& r : after.rings()) {
      std::map<int64_t, std::vector<const Op*>> per_rank;
      for (const RingIssuer& m : r.members) per_rank[m.program->rank] = m.ops;
      Divergence d = before.checkOrder(r.ring_id, per_rank);
      if (!d.ok) return "ring " + std::to_string(r.ring_id) + ": " + d.what;
    }
    return "";
  }

  void report(PassContext& ctx, const std::vector<CollectiveOutcome>& outcomes,
              const std::vector<std::pair<const Program*, std::vector<uint32_t>>>& input_pos, const std::string& revert_code,
              const std::string& revert_why) const {
    size_t k = 0;
    for (const CollectiveOutcome& c : outcomes) {
      ctx.countCandidate();
      const Program* p = c.op->block->program;
      while (k < input_pos.size() && input_pos[k].first != p) ++k;
      ExplainRecord r;
      r.rank = p->rank;
      r.block_idx = c.op->block->idx;
      r.op_index = k < input_pos.size() ? input_pos[k].second[c.op->id] : 0;
      r.op_type = std::string(c.op->type);
      if (!revert_code.empty()) {
        r.code = revert_code;
        if (ctx.explaining()) r.reason = "schedule refused on every rank: " + revert_why;
        ctx.refuse(std::move(r));
        continue;
      }
      if (c.limit == Limit::None) {
        ctx.countRewritten();
        continue;
      }
      r.code = limitCode(c.limit);
      if (ctx.explaining()) r.reason = "ring " + std::to_string(commCollective(*c.op)->ring_id) + ": " + us(c.exposed_s) + " of its " +
                                       us(c.cost_s) + " exposed: " + why(c);
      ctx.refuse(std::move(r));
    }
  }

  std::string why(const CollectiveOutcome& c) const {
    switch (c.limit) {
      case Limit::RingOrder:
        return "it waited " + us(c.ring_wait_s) + " for the ring's previous collective, which it may not pass (one ring's collectives "
               "keep their order on every member rank)";
      case Limit::MaxInFlight:
        return "max-in-flight=" + std::to_string(opts_.max_in_flight) + " collectives of its ring were already in flight";
      case Limit::MemoryCap:
        return "the full schedule raised peak memory by more than memory-cap=" + fraction(opts_.memory_cap) +
               ", so ops moved at most a smaller window";
      case Limit::Window:
        return "no independent compute within window=" + std::to_string(opts_.window) + " ops";
      default:
        return "no independent compute: every op left before its consumers depends on its result";
    }
  }

  // Simulated nanoseconds (analyze's simulateStep under the preset), the worst rank.
  static void figures(PassContext& ctx, const StepTimeline& before, const StepTimeline& after) {
    auto phase = [&](const StepTimeline& t, bool exposed) {
      double worst = 0;
      for (const RankTimeline& r : t.ranks) {
        const PhaseTimes& ph = r.phases[size_t(Phase::Backward)];
        worst = std::max(worst, exposed ? ph.exposed_s : ph.comm_s);
      }
      return int64_t(std::llround(worst * 1e9));
    };
    auto& f = ctx.stats.figures;
    f["sim_backward_comm_ns_before"] = phase(before, false);
    f["sim_backward_comm_ns_after"] = phase(after, false);
    f["sim_backward_exposed_comm_ns_before"] = phase(before, true);
    f["sim_backward_exposed_comm_ns_after"] = phase(after, true);
    f["sim_step_ns_before"] = int64_t(std::llround(before.step_s * 1e9));
    f["sim_step_ns_after"] = int64_t(std::llround(after.step_s * 1e9));
  }
};

}  // namespace

PassInfo overlapCollectivesPass() {
  using O = OverlapCollectives::Options;
  PassInfo info;
  info.name = "overlap-collectives";
  info.description = "Hide backward collectives behind compute: comm stream per ring, split matmul grads, cost-driven list schedule";
  std::vector<std::string> presets;
  for (auto n : presetNames())
    if (n != "host") presets.emplace_back(n);
  info.options = {
      bindOption(&O::max_in_flight, "max-in-flight", "collectives of one ring issued and not finished, at most"),
      bindOption(&O::memory_cap, "memory-cap", "peak memory of a rank may rise at most this fraction; else ops move less far"),
      bindOption(&O::phases, "phases", "reorder the backward ops; the backward and optimizer ops (updates fill comm time); or every op",
                 false, {"backward", "backward+optimize", "all"}),
      bindOption(&O::preset, "preset", "the analyze cost model the schedule is driven by (docs/analyze.md)", false, presets),
      bindOption(&O::window, "window", "an op moves past at most this many earlier unscheduled ops (-1: no bound; 0: keep the order)"),
      bindOption(&O::split_grads, "split-grads", "split matmul_v2_grad into dX and dW GEMMs where a run has collectives"),
  };
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<OverlapCollectives>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
