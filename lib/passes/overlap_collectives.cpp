// Pass overlap-collectives: hide backward communication behind compute. Per rank, in each run of
// backward and optimizer ops (phases=backward+optimize, the default), of backward ops only
// (phases=backward) or of all ops (phases=all) of the entry block:
//  1. split every matmul_v2_grad into its dX and dW GEMMs (matmul_grad_split.h), when the run has
//     a collective: the dX GEMM feeds a collective, the dW GEMM can fill its flight time. Not a
//     grad the cost model times under split-min-ns: the most a split gains is its dW GEMM's
//     time, so a grad of a few nanoseconds (a toy width) would add four ops to gain nothing;
//  2. reorder the run with a list scheduler against the analyze cost model (overlap_schedule.cpp):
//     collectives as early as their inputs allow, independent work during their flight, their
//     consumers as late as possible; a ring's collectives in program order, except that one
//     whose inputs are ready may use the link while an earlier one waits for its inputs
//     (ring-reorder, overlap_ring_queue.h);
//  3. if the program's peak memory (analysis/memory.h) rose by more than memory-cap, reschedule
//     with a window four times smaller (down to the original order);
//  4. put each ring's collectives on stream comm_ring_<id> (overlap_streams.cpp).
// Steps 1-3, and 4, run for each rank on a thread of its own (support/parallel.h; its edits
// through ThreadEdits, journaled in rank order).
// Then the whole job is checked: where a schedule changed a ring's own order, that ring's
// collective order must be identical on every member rank (checkRingOrders,
// collective_rewrite_driver.h; where ring-reorder made the ranks choose differently, every program
// is scheduled again with each ring's order kept), and the ranks must still be able to reach every
// collective across rings (checkSchedulable, or simulateStep when statistics are collected, finds
// cycles; needed only where some program had several streams or reorders its collectives among
// themselves); otherwise
// every program goes back to its original order and --explain says why (overlap_explain.cpp
// words what is left exposed).
#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>
#include <utility>

#include <absl/container/flat_hash_map.h>
#include <absl/functional/function_ref.h>

#include "analysis/memory.h"
#include "analysis/ring_order.h"
#include "analysis/simulate.h"
#include "ir/op_role.h"
#include "passes/builtin_passes.h"
#include "passes/collective_rewrite_driver.h"
#include "passes/machine_option.h"
#include "passes/matmul_grad_split.h"
#include "passes/overlap_support.h"
#include "support/error.h"
#include "support/parallel.h"

namespace spopt {
namespace {

class OverlapCollectives final : public Pass {
 public:
  struct Options {
    int64_t max_in_flight = 4;
    double memory_cap = 0.05;
    std::string phases = "backward+optimize";
    std::string preset = "h100-nvlink", link;  // machine_option.h
    int64_t window = 512;
    bool split_grads = true;
    int64_t split_min_ns = 1000;
    bool ring_reorder = true;
  };
  // Simulated nanoseconds are analyze's simulateStep under the preset, the worst rank's; peaks are
  // the worst scheduled rank's (analysis/memory.h).
  struct Stats {
    Statistic peak_before, peak_after, comm_before, comm_after, exposed_before, exposed_after, step_before, step_after;
  };
  explicit OverlapCollectives(Options o) : opts_(std::move(o)) {}
  struct Placed {  // a region's ops: in the input's order, and as scheduled
    std::vector<Op*> original, now;
  };

  bool run(Job& job, PassContext& ctx) override {
    const HardwareModel model = passMachineModel(job, opts_.preset, opts_.link, "overlap-collectives");
    const RegionPhases phases = *regionPhasesNamed(opts_.phases);  // the option's choices are its names
    OpFactsCache& facts = ctx.facts(job);  // read once for the pipeline
    OpFactsCache::ModelScope costed(facts, model);  // each op costed once, for both simulations and the schedule
    // The job before the pass is simulated for the statistics only; the job after is always
    // walked, the proof that the new orders cannot hang across rings (timed for the statistics).
    const bool statistics = ctx.collectingStatistics();
    StepTimeline sim_before = statistics ? simulate(job, facts) : StepTimeline{};
    bool changed = false;
    bool rings_reordered = false;  // some region of the final schedules issues a ring's collectives in a new order
    // Whether the new orders need the cross-ring hang proof. Not where every scheduled program ran
    // on one stream and keeps the order of its collectives and sends among themselves: each edge
    // of the happens-before graph points forward in program order, so a cycle after the pass
    // would run between collectives in an order the input already had, and the input's single
    // stream ordered every such pair: the input would hang the same way (the verifier's and
    // validate's business, not the pass's).
    bool prove_hang_free = false;
    std::vector<std::vector<Placed>> placed(job.programs.size());
    std::vector<CollectiveOutcome> outcomes;
    std::vector<std::pair<const Program*, std::vector<uint32_t>>> input_pos;  // for explain records
    std::vector<std::unique_ptr<BufferAliases>> aliases_of(job.programs.size());  // of each scheduled entry block
    peak_before_.assign(job.programs.size(), 0);
    peak_after_.assign(job.programs.size(), 0);
    // The programs with collectives to schedule are found, split, scheduled and measured in
    // parallel, as MLIR's pass manager runs a pass on isolated functions: each program on one
    // thread at a time, reading only itself and the facts (every op's read above), editing only
    // itself, its edits journaled apart and appended in program order.
    std::vector<std::optional<ProgramSchedule>> found(job.programs.size());
    parallelFor(job.programs.size(), [&](size_t i) {
      Program& p = *job.programs[i];
      if (p.blocks.empty()) return;
      Block& entry = *p.blocks.front();
      auto regions = scheduleRegions(entry, phases, &facts);
      bool has_comm = false;
      for (auto& r : regions)
        for (Op* op : r) has_comm = has_comm || commRing(*op, &facts).has_value();
      if (!has_comm) return;
      ProgramSchedule& w = found[i].emplace();
      w.program = &p;
      w.pos.assign(p.next_op_id, 0);
      uint32_t at = 0;
      w.one_stream = p.blocks.size() == 1;  // every op on the default stream, no events
      for (Op& op : entry.inOrder()) {
        w.pos[op.id] = at++;
        const OpFacts& f = facts.facts(op);
        w.one_stream = w.one_stream && f.stream == 0 && !f.has_events;
      }
      const std::optional<int64_t> received_peak = ctx.receivedPeakBytes(p);  // read before the first edit of p
      peak_before_[i] = received_peak ? *received_peak : peakBytes(p, {true, &facts});
      w.regions = std::move(regions);
    });
    std::vector<ProgramSchedule> work;
    for (auto& w : found)
      if (w) work.push_back(std::move(*w));
    editInParallel(job, work.size(), [&](size_t i) {
      ProgramSchedule& w = work[i];
      Block& entry = *w.program->blocks.front();
      if (opts_.split_grads) std::tie(w.split, w.whole) = splitGrads(entry, w.regions, facts, double(opts_.split_min_ns) * 1e-9);
      for (auto& r : w.regions)  // the split's new ops (not collectives: their facts are the thread's own)
        for (Op* op : r) facts.facts(*op);
      aliases_of[w.program->position] = std::make_unique<BufferAliases>(entry);
      schedule(w, facts, *aliases_of[w.program->position], placed[w.program->position]);
      w.same_comm_order = sameCommOrder(placed[w.program->position], facts);
    });
    for (ProgramSchedule& w : work) {
      const Program& p = *w.program;
      if (w.split) {
        changed = true;
        ctx.stats.notes["matmul-grad-split"] += w.split;
      }
      if (w.whole) ctx.stats.notes["matmul-grad-under-split-min"] += w.whole;
      rings_reordered = rings_reordered || w.ring_reordered;
      prove_hang_free = prove_hang_free || !w.one_stream || !w.same_comm_order;
      outcomes.insert(outcomes.end(), w.outcomes.begin(), w.outcomes.end());
      input_pos.emplace_back(&p, std::move(w.pos));
    }

    // Where no schedule changed a ring's own order (splitting grads and assigning streams change no
    // collective), each ring keeps the input's order, already verified: only a reorder is checked
    // across ranks, against the orders before (the regions' original orders, put back meanwhile).
    Refusal revert;
    if (rings_reordered) {
      for (auto& pl : placed)
        for (auto& x : pl) applyOrder(x.now, x.original);
      RingOrder ring_before(job, &facts);
      for (auto& pl : placed)
        for (auto& x : pl) applyOrder(x.original, x.now);
      revert = checkRingOrders(job, ring_before, &facts);
    }
    if (!revert.empty() && opts_.ring_reorder) {
      // The ranks of a ring chose different orders: schedule again with each ring's order kept.
      for (auto& pl : placed)
        for (auto& x : pl) applyOrder(x.now, x.original);
      Options kept = opts_;
      kept.ring_reorder = false;
      ctx.receive({});  // the grads are split now: the peaks received no longer hold
      return OverlapCollectives(kept).run(job, ctx) || changed;
    }
    // Streams first: the simulation after the pass must see the comm streams. Each program's on
    // its own thread, as its schedule was.
    size_t moved = 0, events = 0;
    editInParallel(job, work.size(), [&](size_t i) {
      ProgramSchedule& w = work[i];
      std::vector<std::vector<Op*>> regions;
      for (auto& x : placed[w.program->position]) regions.push_back(x.now);
      std::tie(w.moved, w.events) = assignCommStreams(job, regions, *aliases_of[w.program->position], &facts);
    });
    for (const ProgramSchedule& w : work) moved += w.moved, events += w.events;
    StepTimeline sim_after;
    if (input_pos.empty()) {
      sim_after = sim_before;  // no program had a collective to schedule: nothing was split, moved or put on a stream
    } else if (revert.empty()) {
      try {
        if (statistics) sim_after = simulateStep(job, facts, false);
        else if (prove_hang_free) checkSchedulable(job, facts);
      } catch (const InputError& e) {
        revert = {"cross-ring-order", std::string("the new orders would deadlock across rings: ") + e.what()};
      }
    }
    if (!revert.empty()) {
      for (auto& pl : placed)
        for (auto& x : pl) applyOrder(x.now, x.original);
      sim_after = statistics ? simulate(job, facts) : StepTimeline{};
    } else {
      for (const auto& p : job.programs) {  // streams and events move no buffer
        if (!placed[p->position].empty()) ctx.leavePeakBytes(*p, peak_after_[p->position]);
        else if (auto received = ctx.receivedPeakBytes(*p)) ctx.leavePeakBytes(*p, *received);  // not edited
      }
    }
    for (auto& pl : placed)
      for (auto& x : pl) changed = changed || x.now != x.original;
    changed = changed || moved > 0 || events > 0;
    if (events) ctx.stats.notes["inplace-event"] += events;
    report(ctx, outcomes, input_pos, revert);
    Stats stats = statistics ? simulated(sim_before, sim_after) : Stats{};
    if (!outcomes.empty()) {  // the worst rank's peak, of the programs scheduled
      stats.peak_before = *std::max_element(peak_before_.begin(), peak_before_.end());
      stats.peak_after = *std::max_element(peak_after_.begin(), peak_after_.end());
    }
    ctx.publish(stats);
    return changed;
  }

 private:
  Options opts_;
  std::vector<int64_t> peak_before_, peak_after_;  // [program position]: peak bytes (0: not scheduled)

  // A program being scheduled: prepared in turn, then scheduled in parallel with the others.
  struct ProgramSchedule {
    Program* program = nullptr;
    size_t split = 0;        // matmul grads split
    size_t whole = 0;        // splittable ones left whole: under split-min-ns
    size_t moved = 0, events = 0;  // collectives put on a comm stream, events added (assignCommStreams)
    std::vector<std::vector<Op*>> regions;
    std::vector<uint32_t> pos;  // [op id]: its index in the entry block before the pass
    bool one_stream = false;    // before the pass, every op on the default stream and no events
    // The schedule's results.
    std::vector<CollectiveOutcome> outcomes;
    bool ring_reordered = false;  // some region issues a ring's collectives in a new order
    bool same_comm_order = true;  // every region issues its communicating ops in the order it had
  };

  // Schedules `w`'s regions and applies the orders (into `placed`): under the window, then
  // smaller windows while the peak rises past memory-cap. Reads only `w`'s program and facts
  // already read; moves only its ops.
  void schedule(ProgramSchedule& w, OpFactsCache& facts, const BufferAliases& aliases, std::vector<Placed>& placed) {
    Program& p = *w.program;
    const int64_t peak_before = peak_before_[p.position];
    size_t window = opts_.window < 0 ? SIZE_MAX / 2 : size_t(opts_.window);
    absl::flat_hash_map<const Op*, CollectiveOutcome> first;  // under the first (widest) window
    bool memory_limited = false;
    std::vector<CollectiveOutcome>& mine = w.outcomes;
    for (;;) {
      mine.clear();
      w.ring_reordered = false;
      placed.clear();
      for (const auto& region : w.regions) {
        RegionSchedule s = scheduleRegion(region, /*cost: the facts'*/ {}, {opts_.max_in_flight, window, &aliases, &facts, opts_.ring_reorder});
        applyOrder(region, s.order);
        placed.push_back({region, s.order});
        w.ring_reordered = w.ring_reordered || s.ring_order_changed;
        mine.insert(mine.end(), s.collectives.begin(), s.collectives.end());
      }
      if (first.empty())
        for (const CollectiveOutcome& c : mine) first[c.op] = c;
      const int64_t peak = peakBytes(p, {true, &facts});
      peak_after_[p.position] = peak;
      if (window == 0 || double(peak) <= double(peak_before) * (1 + opts_.memory_cap)) break;
      for (auto& x : placed) applyOrder(x.now, x.original);
      memory_limited = true;
      window /= 4;
    }
    if (!memory_limited) return;
    // A collective more exposed under the smaller window than under the first is the memory cap's
    // doing; one exposed as much under the first keeps the first schedule's reason.
    for (auto& c : mine) {
      if (c.limit == Limit::None) continue;
      auto it = first.find(c.op);
      bool as_exposed = it != first.end() && it->second.limit != Limit::None && c.exposed_s <= it->second.exposed_s * 1.001;
      c.limit = as_exposed ? it->second.limit : Limit::MemoryCap;
    }
  }

  // Splits every splittable matmul grad of `regions` (regions of `entry`) that `facts` times at
  // `min_s` or more, and lists each region's ops again; returns how many were split and how many
  // splittable ones were left whole. A split puts its ops at the grad op's place, so a region is
  // still the run between the same two ops outside it (or the block's ends).
  static std::pair<size_t, size_t> splitGrads(Block& entry, std::vector<std::vector<Op*>>& regions, OpFactsCache& facts, double min_s) {
    size_t split = 0, whole = 0;
    for (auto& r : regions) {
      Op* before = r.front()->self == entry.ops.begin() ? nullptr : &*std::prev(r.front()->self);
      Op* after = std::next(r.back()->self) == entry.ops.end() ? nullptr : &*std::next(r.back()->self);
      size_t split_here = 0;
      for (Op* op : r) {
        if (!matmulGradSplitRefusal(*op).empty()) continue;
        if (facts.cost(*op) < min_s) {
          ++whole;
          continue;
        }
        splitMatmulGrad(*entry.program->job, *op);
        ++split_here;
      }
      if (!split_here) continue;
      split += split_here;
      r.clear();
      for (auto it = before ? std::next(before->self) : entry.ops.begin(); it != (after ? after->self : entry.ops.end()); ++it)
        r.push_back(&*it);
    }
    return {split, whole};
  }

  // Whether every region issues its communicating ops (collectives, sends, receives) in the
  // order it had.
  static bool sameCommOrder(const std::vector<Placed>& regions, OpFactsCache& facts) {
    for (const Placed& r : regions) {
      if (r.now == r.original) continue;
      auto communicating = [&](const Op* op) { return facts.facts(*op).comm != UINT32_MAX; };
      auto a = r.original.begin(), b = r.now.begin();
      for (;; ++a, ++b) {
        a = std::find_if(a, r.original.end(), communicating);
        b = std::find_if(b, r.now.end(), communicating);
        if (a == r.original.end() || b == r.now.end()) {
          if (a != r.original.end() || b != r.now.end()) return false;
          break;
        }
        if (*a != *b) return false;
      }
    }
    return true;
  }

  static StepTimeline simulate(const Job& job, OpFactsCache& facts) {
    try {
      return simulateStep(job, facts, false);  // the statistics read only the totals
    } catch (const InputError&) {
      return {};
    }
  }

  void report(PassContext& ctx, const std::vector<CollectiveOutcome>& outcomes,
              const std::vector<std::pair<const Program*, std::vector<uint32_t>>>& input_pos, const Refusal& revert) const {
    const ExposureLimits limits{opts_.max_in_flight, opts_.memory_cap, opts_.window};
    size_t k = 0;
    for (const CollectiveOutcome& c : outcomes) {
      ctx.countCandidate();
      const Program* p = c.op->block->program;
      while (k < input_pos.size() && input_pos[k].first != p) ++k;
      if (revert.empty() && c.limit == Limit::None) {
        ctx.countRewritten();
        continue;
      }
      if (!ctx.explaining()) {
        ctx.countRefusal(revert.empty() ? limitCode(c.limit) : std::string_view(revert.code));
        continue;
      }
      size_t op_index = k < input_pos.size() ? input_pos[k].second[c.op->id] : 0;
      Refusal why = revert.empty() ? exposedRefusal(c, limits, /*explaining=*/true)
                                   : Refusal{revert.code, "schedule refused on every rank: " + revert.reason};
      ctx.refuse(explainRecord(*c.op, op_index, why));
    }
  }

  static Stats simulated(const StepTimeline& before, const StepTimeline& after) {
    auto ns = [](double s) { return int64_t(std::llround(s * 1e9)); };
    auto backward = [&](const StepTimeline& t, double PhaseTimes::*time) {  // the worst rank's
      double worst = 0;
      for (const RankTimeline& r : t.ranks) worst = std::max(worst, r.phases[size_t(Phase::Backward)].*time);
      return ns(worst);
    };
    Stats s;
    s.comm_before = backward(before, &PhaseTimes::comm_s);
    s.comm_after = backward(after, &PhaseTimes::comm_s);
    s.exposed_before = backward(before, &PhaseTimes::exposed_s);
    s.exposed_after = backward(after, &PhaseTimes::exposed_s);
    s.step_before = ns(before.step_s);
    s.step_after = ns(after.step_s);
    return s;
  }
};

}  // namespace

PassInfo overlapCollectivesPass() {
  using O = OverlapCollectives::Options;
  PassInfo info;
  info.name = "overlap-collectives";
  info.journaled = true;  // edits only through OpBuilder, eraseOp, moveOp and the op_role.h setters
  info.description = "Hide backward collectives behind compute: comm stream per ring, split matmul grads, cost-driven list schedule";
  std::vector<OptionSpec> machine = machineOptions(&O::preset, &O::link);
  info.options = {
      bindOption(&O::max_in_flight, "max-in-flight", "collectives of one ring issued and not finished, at most"),
      bindOption(&O::memory_cap, "memory-cap", "peak memory of a rank may rise at most this fraction; else ops move less far"),
      bindOption(&O::phases, "phases", "reorder the backward ops; the backward and optimizer ops (updates fill comm time); or every op",
                 false, {"backward", "backward+optimize", "all"}),
      machine[0],
      machine[1],
      bindOption(&O::window, "window", "an op moves past at most this many earlier unscheduled ops (-1: no bound; 0: keep the order)"),
      bindOption(&O::split_grads, "split-grads", "split matmul_v2_grad into dX and dW GEMMs where a run has collectives"),
      bindOption(&O::split_min_ns, "split-min-ns",
                 "split only a grad the cost model times at this many ns or more (a split gains at most its dW GEMM's time); 0: every one"),
      bindOption(&O::ring_reorder, "ring-reorder",
                 "a ready collective may pass its ring's earlier ones while they wait for inputs (same order on every rank)"),
  };
  using S = OverlapCollectives::Stats;
  info.statistics = peakBytesStatistics(&S::peak_before, &S::peak_after);
  auto ns = [&](Statistic S::*m, const char* name, const char* help) {
    info.statistics.push_back(bindStatistic(m, name, StatUnit::Nanoseconds, std::string(help) + " (simulated, the worst rank)"));
  };
  ns(&S::comm_before, "sim-backward-comm-ns-before", "backward communication time before the pass");
  ns(&S::comm_after, "sim-backward-comm-ns-after", "backward communication time after the pass");
  ns(&S::exposed_before, "sim-backward-exposed-comm-ns-before", "backward communication the compute stream waits for, before");
  ns(&S::exposed_after, "sim-backward-exposed-comm-ns-after", "backward communication the compute stream waits for, after");
  ns(&S::step_before, "sim-step-ns-before", "step time before the pass");
  ns(&S::step_after, "sim-step-ns-after", "step time after the pass");
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<OverlapCollectives>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
