// Pass regather-activations: keep a column-parallel linear's sequence shard, not its gathered input,
// for backward, and all-gather the shard again right before backward needs it (Megatron-LM's and
// Paddle's sequence-parallel memory trade, as a static rewrite of every rank at once). The matcher
// (regather_match.h) finds forward all-gathers whose output backward reads by buffer and whose
// shard is intact until then; the driver (collective_rewrite_driver.h) decides on every member rank
// of the ring alike; this file adds the pass's own conditions and the memory policy.
//
// Decision, per aligned ring position k (analysis/ring_order.h), all-or-none on the ring's members:
//  1. every member's collective #k is a matching forward all-gather, else "peer-refused";
//  2. every member's re-gather lands after the same number of ring collectives, else "ring-order";
//  3. min-bytes; in mode=auto, the memory model (regather_memory.h): applied on every member, kept
//     only when no member's peak rises and at least one member's peak drops ("peak-not-lowered"),
//     largest gathered tensors first; with budget=, positions stop once every member is under it;
//  4. the final insertion set is checked per ring (CandidateTable::checkInsertions); a divergence
//     (not expected after step 2) refuses every re-gather of that ring.
// The rewrite (rewriteRegather): same type, attrs and dist_attr (so execution_stream) as the forward
// all-gather, op_role backward, a fresh `G@regather` in the insertion block read by G's backward
// buffer readers (shape-only readers keep G).
//
// Linear: one walk over the ops, O(uses) per candidate, O(ring length) per ring check; auto adds
// O(ops) per rank (one profile) and O(log ops) per tentative decision.
#include <algorithm>

#include "analysis/memory.h"
#include "analysis/ring_order.h"
#include "ops/op_builder.h"
#include "passes/builtin_passes.h"
#include "passes/collective_rewrite_driver.h"
#include "passes/regather_match.h"
#include "passes/regather_memory.h"
#include "support/parallel.h"

namespace spopt {
namespace {

struct RankMemory {
  std::vector<int32_t> dies_after;      // the entry block's (BlockLiveness::dies_after)
  std::unique_ptr<LiveBytesTree> tree;  // mode=auto only
  int64_t peak_before = 0;
};

using Table = CollectiveRewriteDriver<RegatherMatch>;

class RegatherActivations final : public Pass {
 public:
  struct Options {
    std::string mode = "always";
    int64_t budget = 0;
    int64_t min_bytes = 0;
  };
  struct Stats {
    Statistic regathers, released_early, shard_kept_alive, peak_before, peak_after;
  };
  explicit RegatherActivations(Options o) : opts_(std::move(o)) {}

  bool run(Job& job, PassContext& ctx) override {
    if (opts_.mode == "off") return false;
    memory_.clear();
    Table table(job, {"re-gather", "re-gathered", "re-gather", "a forward all-gather"});
    // Each program's all-gathers are matched on a thread of their own (the matcher reads only the
    // all-gather's program), then entered in program order.
    OpFactsCache& facts = ctx.facts(job);  // read once for the pipeline: most ops do not communicate
    table.addPerProgram(job, [&](Program& p, std::vector<Table::Matched>& found) {
      BlockOwners owners(p);
      for (auto& b : p.blocks)
        for (Op& op : b->inOrder()) {
          auto coll = facts.collective(op);
          if (!coll || coll->kind != CollectiveKind::AllGather) continue;
          RegatherResult r = matchRegather(op, *coll, owners, ctx.explaining());
          if (r.candidate) found.push_back({&op, *coll, true, std::move(r.match), std::move(r.refusal)});
        }
    });
    const RingOrder rings = ctx.receivedRingOrder(job);
    auto before = [&](size_t i) -> const Op* { return table.match(i).insert_before; };
    auto planned = [&](size_t i) { return PlannedCollective{before(i), signatureOf(*table.state(i).op, table.state(i).coll)}; };
    DecideOptions decide;
    decide.check = [&](const AgreedPosition& pos) -> Refusal {
      if (Refusal r = table.sameInsertionSlot(pos, before); !r.empty()) return r;
      int64_t bytes = gatheredBytes(table, pos);
      if (bytes >= opts_.min_bytes) return {};
      return {"too-small", std::to_string(bytes) + " bytes gathered, under min-bytes=" + std::to_string(opts_.min_bytes)};
    };
    std::vector<AgreedPosition> positions = table.decide(rings, decide);
    if (opts_.mode == "auto") decideByMemory(table, positions);
    table.checkInsertions(rings, positions, planned);
    Stats stats;
    int64_t regathers = 0, released = 0, kept = 0;
    bool any_change = false;
    for (size_t i = 0; i < table.size() && !any_change; ++i) any_change = table.state(i).change;
    // The shards' deaths (noteShardKept's caveats) and the peaks before are read only by --explain
    // and the statistics: a plain rewrite skips that walk of every program.
    const bool reporting = ctx.explaining() || ctx.collectingStatistics();
    if (any_change && reporting) measureEveryProgram(job);
    for (size_t i = 0; i < table.size(); ++i) {
      if (!table.state(i).change) continue;
      ++regathers;
      released += varBytes(*table.match(i).gathered);
      if (reporting) kept += noteShardKept(table.state(i), table.match(i));
    }
    table.report(ctx);
    if (regathers == 0) return false;
    stats.regathers = regathers;
    stats.released_early = released;
    stats.shard_kept_alive = kept;
    if (reporting)
      for (auto& p : job.programs) stats.peak_before.raiseTo(memoryOf(*p).peak_before);
    table.rewriteChanged(job, rewriteRegather);
    std::vector<int64_t> peaks(job.programs.size());
    ctx.factsAfterEdits(job);  // with the re-gathers just added
    parallelFor(job.programs.size(), [&](size_t i) { peaks[i] = peakBytes(*job.programs[i], {true, &facts}); });  // each reads its program only
    for (auto& p : job.programs) {
      stats.peak_after.raiseTo(peaks[p->position]);
      ctx.leavePeakBytes(*p, peaks[p->position]);  // overlap-collectives' peak before, without a walk of its own
    }
    ctx.publish(stats);
    return true;
  }

 private:
  Options opts_;
  std::map<size_t, RankMemory> memory_;  // program position -> its liveness and memory model

  static int64_t gatheredBytes(const Table& table, const AgreedPosition& pos) {
    int64_t bytes = 0;
    for (size_t i : pos.members) bytes = std::max(bytes, varBytes(*table.match(i).gathered));
    return bytes;
  }

  RankMemory& memoryOf(Program& p) {
    auto [it, fresh] = memory_.try_emplace(p.position);
    if (fresh) measure(p, it->second);
    return it->second;
  }
  void measure(const Program& p, RankMemory& m) const {
    if (opts_.mode == "auto") {  // the live bytes after every op: what decideByMemory edits
      Liveness live = computeProgramLiveness(p);
      MemoryProfile prof = profileMemory(p, live, 0);
      m.tree = std::make_unique<LiveBytesTree>(prof.live_at);
      m.dies_after = live.entry().dies_after;
      m.peak_before = prof.peak_bytes;
    } else {  // the peak and each buffer's death only: one walk, no per-op lists
      m.peak_before = peakBytes(p, {}, &m.dies_after);
    }
  }
  // memoryOf for every program not measured yet, the programs in parallel (each reads its own).
  void measureEveryProgram(const Job& job) {
    std::vector<std::pair<const Program*, RankMemory*>> todo;
    for (const auto& p : job.programs)
      if (auto [it, fresh] = memory_.try_emplace(p->position); fresh) todo.emplace_back(p.get(), &it->second);
    parallelFor(todo.size(), [&](size_t i) { measure(*todo[i].first, *todo[i].second); });
  }

  // A shard whose buffer died before the re-gather now lives until it: a caveat, and its cost.
  int64_t noteShardKept(CandidateState& c, const RegatherMatch& m) {
    if (m.ag_at < 0 || !c.note.empty()) return 0;
    int32_t dies = memoryOf(*c.op->block->program).dies_after[m.shard->id];
    if (dies < 0 || dies >= m.insert_at) return 0;
    c.note = {"shard-kept-alive", std::string(m.shard->name) + " (" + std::to_string(varBytes(*m.shard)) + " bytes) died after op " +
                                      std::to_string(dies) + "; it now lives until the re-gather before op " + std::to_string(m.insert_at)};
    return varBytes(*m.shard);
  }

  // mode=auto: positions largest gathered tensor first, each kept only if it lowers some member's
  // modelled peak and raises none (and, with budget=, while some member is over it).
  void decideByMemory(Table& table, std::vector<AgreedPosition>& positions) {
    std::vector<std::pair<int64_t, AgreedPosition*>> by_bytes;
    for (AgreedPosition& pos : positions) by_bytes.emplace_back(gatheredBytes(table, pos), &pos);
    std::stable_sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [bytes, at] : by_bytes) {
      const AgreedPosition& pos = *at;
      auto memoryAt = [&](size_t i) -> RankMemory& { return memoryOf(*table.state(i).op->block->program); };
      bool modelled = true, over_budget = opts_.budget <= 0;
      for (size_t i : pos.members) {
        const RegatherMatch& m = table.match(i);
        modelled = modelled && m.ag_at >= 0 && varBytesKnown(*m.gathered) && varBytesKnown(*m.shard);
        if (!over_budget) over_budget = memoryAt(i).tree->peak() > opts_.budget;
      }
      if (!modelled) table.refuseAll(pos, {"not-modelled", "the memory model covers entry-block tensors of known size only"});
      else if (!over_budget) table.refuseAll(pos, {"budget-met", "every member's peak is already within budget=" + std::to_string(opts_.budget)});
      if (!modelled || !over_budget) continue;
      std::vector<int64_t> before;
      for (size_t i : pos.members) before.push_back(memoryAt(i).tree->peak());
      auto apply = [&](int sign) {
        for (size_t i : pos.members) applyRegatherModel(*memoryAt(i).tree, memoryAt(i).dies_after, table.match(i), sign);
      };
      apply(+1);
      bool raised = false, lowered = false;
      int64_t raised_rank = 0;
      for (size_t j = 0; j < pos.members.size(); ++j) {
        int64_t after = memoryAt(pos.members[j]).tree->peak();
        if (after > before[j] && !raised) raised = true, raised_rank = table.state(pos.members[j]).op->block->program->rank;
        lowered = lowered || after < before[j];
      }
      if (raised || !lowered) {
        apply(-1);
        table.refuseAll(pos, {"peak-not-lowered", raised ? "re-gathering would raise rank " + std::to_string(raised_rank) + "'s peak memory"
                                                          : "re-gathering lowers no member rank's peak memory"});
      }
    }
  }
};

}  // namespace

PassInfo regatherActivationsPass() {
  using O = RegatherActivations::Options;
  PassInfo info;
  info.name = "regather-activations";
  info.journaled = true;  // edits only through OpBuilder and setInputArg
  info.description =
      "Keep a forward all-gather's shard for backward and all-gather it again there, so the gathered tensor dies after its forward use";
  info.options = {
      bindOption(&O::mode, "mode",
                 "always: every safe candidate; auto: only when it lowers the rank's peak memory; off: nothing", false,
                 {"always", "auto", "off"}),
      bindOption(&O::budget, "budget", "auto: stop once every member rank's peak is at most this many bytes (0: no budget)"),
      bindOption(&O::min_bytes, "min-bytes", "skip gathered tensors smaller than this many bytes"),
  };
  using S = RegatherActivations::Stats;
  info.statistics = {
      bindStatistic(&S::regathers, "regathers", StatUnit::Count, "all-gathers added in backward, all ranks"),
      bindStatistic(&S::released_early, "gathered-bytes-released-early", StatUnit::Bytes,
                    "bytes of the gathered tensors that now die after their last forward use"),
      bindStatistic(&S::shard_kept_alive, "shard-bytes-kept-alive", StatUnit::Bytes,
                    "bytes of the shards that now live until their re-gather (they died earlier)"),
  };
  for (StatisticSpec& peak : peakBytesStatistics(&S::peak_before, &S::peak_after)) info.statistics.push_back(std::move(peak));
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<RegatherActivations>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
