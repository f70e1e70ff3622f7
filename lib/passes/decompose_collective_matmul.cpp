// Pass decompose-collective-matmul (collective matmul, PyTorch's async TP, XLA's windowed einsum):
// the forward's communication, which nothing hides, is cut into one chunk per ring member (each in
// chunks= row pieces) so that a matmul multiplies the piece in hand while the next travels on the
// comm stream. The matcher
// (collective_matmul_match.h) finds the all-gather -> matmul and matmul -> reduce-scatter sites,
// forward and backward, and refuses what the math does not allow; the cost model
// (collective_matmul_cost.h) declines sites whose chunks are latency-bound; the driver
// (collective_rewrite_driver.h) decides every aligned ring position on all members or none, and
// this file adds the memory check and the options.
//
// Decision per aligned ring position k, all-or-none on the ring's members:
//  1. every member's collective #k is a matching site, else "peer-refused";
//  2. every member's transfers land after the same number of ring collectives, else "ring-order";
//  3. one shape (chunks=, directions=, route=: those given, else the candidates of
//     ringCandidates) for all members: the one whose ring is shortest on the slowest member;
//     mode=auto: every member's pipeline beats the site as it is under preset=, else
//     "latency-bound" / "no-gain" (the slowest member's figures);
//  4. no member's live bytes at the site, plus the chunks, exceed its peak by more than
//     memory-cap (the overlap pass's cap), else "memory-cap".
// phases=forward (the default) leaves backward sites to overlap-collectives, which already hides
// them behind the dW GEMMs (decomposing them measured slower: docs/passes.md). The pieces travel
// as a ring of neighbour exchanges (send/recv pairs, one group a piece) on the ring's comm stream,
// in the same order on every member (collective_matmul_rewrite.cpp). A shard whose rows do not
// divide into chunks= pieces is refused ("chunks-indivisible"), never cut otherwise.
#include <algorithm>
#include <cstdio>
#include <optional>

#include <absl/container/flat_hash_set.h>
#include <absl/container/node_hash_map.h>

#include "analysis/memory.h"
#include "analysis/ring_order.h"
#include "passes/builtin_passes.h"
#include "passes/collective_matmul_cost.h"
#include "ops/op_builder.h"
#include "passes/collective_rewrite_driver.h"
#include "passes/overlap_support.h"
#include "passes/machine_option.h"
#include "passes/regather_match.h"
#include "support/error.h"
#include "support/parallel.h"

namespace spopt {
namespace {

using Table = CollectiveRewriteDriver<CollectiveMatmulMatch>;

std::string fraction(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", f);
  return b;
}

class DecomposeCollectiveMatmul final : public Pass {
 public:
  struct Options {
    std::string mode = "auto";
    std::string phases = "forward";
    std::string forms = "both";
    std::string preset = "h100-nvlink", link;  // machine_option.h
    double memory_cap = 0.05;
    std::string directions = "auto", route = "auto";
    int64_t chunks = 0;  // 0: per site
  };
  struct Stats {
    Statistic gathers, scatters, saved_ns, peak_before, peak_after;
  };
  explicit DecomposeCollectiveMatmul(Options o) : opts_(std::move(o)) {}

  bool run(Job& job, PassContext& ctx) override {
    if (opts_.mode == "off") return false;
    const HardwareModel model = passMachineModel(job, opts_.preset, opts_.link, "decompose-collective-matmul");
    Table table(job, {"decompose", "decomposed", "decomposition", "an all-gather or reduce-scatter next to a matmul"});
    collect(job, ctx.facts(job), table, ctx.explaining(), ctx.explaining() || ctx.collectingStatistics(), opts_.phases == "all");
    const RingOrder rings = ctx.receivedRingOrder(job);
    // Each program's live bytes, profiled at the first site of it the cost model keeps (most jobs'
    // sites are refused before: no profile), and for the statistics.
    std::vector<std::optional<MemoryProfile>> memory(job.programs.size());
    auto memoryOf = [&](const Program& p) -> const MemoryProfile& {
      std::optional<MemoryProfile>& m = memory[p.position];
      if (!m) m = profileMemory(p, 0);
      return *m;
    };
    auto before = [&](size_t i) -> const Op* {
      const CollectiveMatmulMatch& m = table.match(i);
      return m.form == CollectiveMatmulForm::AllGather ? m.collective : m.matmuls.front().op;
    };
    Stats stats;
    int64_t saved_ns = 0;
    DecideOptions decide;
    // Per candidate, the estimate of the shape its ring takes (the explain note and the rewrite read it).
    std::vector<CollectiveMatmulEstimate> chosen(table.size());
    WeighedSites sites;
    const std::vector<const Weighed*> weighed = weighAll(table, model, sites);
    std::vector<CollectiveMatmulEstimate> estimates;  // [member][shape], one position at a time
    decide.check = [&](const AgreedPosition& pos) -> Refusal {
      if (Refusal r = table.sameInsertionSlot(pos, before); !r.empty()) return r;
      // One shape for the ring's members (their exchanges pair): the shortest on the slowest member.
      const std::vector<RingShape>& shapes = weighed[pos.members.front()]->shapes;
      estimates.clear();
      for (size_t i : pos.members) {
        if (sameShapes(weighed[i]->shapes, shapes)) {
          estimates.insert(estimates.end(), weighed[i]->estimates.begin(), weighed[i]->estimates.end());
          continue;
        }
        const CollectiveMatmulSite site = collectiveMatmulSite(table.match(i), model);  // a member whose shard cuts otherwise
        for (const RingShape& shape : shapes) estimates.push_back(estimateCollectiveMatmul(site, model, shape));
      }
      auto estimate = [&](size_t member, size_t shape) -> const CollectiveMatmulEstimate& { return estimates[member * shapes.size() + shape]; };
      size_t best = 0;
      double best_s = 1e30;
      for (size_t shape = 0; shape < shapes.size(); ++shape) {
        double worst = 0;
        for (size_t member = 0; member < pos.members.size(); ++member) worst = std::max(worst, estimate(member, shape).decomposed_s);
        if (worst < best_s) best_s = worst, best = shape;
      }
      double worst_saving = 1e30;
      for (size_t member = 0; member < pos.members.size(); ++member) {
        const size_t i = pos.members[member];
        const CollectiveMatmulEstimate& e = chosen[i] = estimate(member, best);
        if (opts_.mode == "auto")
          if (Refusal r = collectiveMatmulCostRefusal(e, ctx.explaining()); !r.empty()) return r;
        worst_saving = std::min(worst_saving, e.whole_s - e.decomposed_s);
        const CandidateState& c = table.state(i);
        if (Refusal r = memoryRefusal(c, table.match(i), memoryOf(*c.op->block->program), e.ring.chunks); !r.empty()) return r;
      }
      saved_ns += int64_t(worst_saving * 1e9);
      return {};
    };
    table.decide(rings, decide);
    if (ctx.explaining())  // what the ring leaves exposed, on each site it takes
      for (size_t i = 0; i < table.size(); ++i)
        if (table.state(i).change && table.state(i).note.empty()) table.state(i).note = {"ring", collectiveMatmulExposure(chosen[i])};
    table.report(ctx);
    int64_t gathers = 0, scatters = 0;
    for (size_t i = 0; i < table.size(); ++i)
      if (table.state(i).change) ++(table.match(i).form == CollectiveMatmulForm::AllGather ? gathers : scatters);
    if (gathers + scatters == 0) return false;
    const bool statistics = ctx.collectingStatistics();
    if (statistics)
      for (auto& p : job.programs) stats.peak_before.raiseTo(memoryOf(*p).peak_bytes);
    for (size_t i = 0; i < table.size(); ++i) {
      if (!table.state(i).change) continue;
      const CollectiveMatmulMatch& m = table.match(i);
      const Program& p = *m.collective->block->program;
      rewriteCollectiveMatmul(m, job.group(m.coll.ring_id)->positionOf(p.rank), commStreamName(m.coll.ring_id), chosen[i].ring);
    }
    if (statistics)
      for (auto& p : job.programs) stats.peak_after.raiseTo(peakBytes(*p));
    stats.gathers = gathers;
    stats.scatters = scatters;
    stats.saved_ns = saved_ns;
    ctx.publish(stats);
    return true;
  }

 private:
  Options opts_;

  // A site's ring shapes and its estimate under each.
  struct Weighed {
    std::vector<RingShape> shapes;
    std::vector<CollectiveMatmulEstimate> estimates;  // [shape]
  };
  // The distinct sites (CollectiveMatmulSite and the shard's rows, which ringCandidates reads) and
  // their figures, one map per slice of weighAll: node-based, so a candidate's pointer stays valid.
  using SiteKey = std::pair<CollectiveMatmulSite, int64_t>;
  using WeighedSites = std::vector<absl::node_hash_map<SiteKey, Weighed>>;
  // Every matched candidate weighed before the decision, slices of the table on threads of their
  // own (a site reads only its program, and the estimates only the site), each distinct site once:
  // the decision, which must go position by position, then only compares figures.
  std::vector<const Weighed*> weighAll(const Table& table, const HardwareModel& model, WeighedSites& sites) const {
    std::vector<const Weighed*> out(table.size(), nullptr);
    const size_t slices = std::min(table.size(), threadLimit());
    sites.resize(slices);
    parallelFor(slices, [&](size_t s) {
      for (size_t i = table.size() * s / slices; i < table.size() * (s + 1) / slices; ++i) {
        if (!table.state(i).matched) continue;
        const CollectiveMatmulMatch& m = table.match(i);
        auto [it, fresh] = sites[s].try_emplace(SiteKey{collectiveMatmulSite(m, model), m.shard->shape[0]});
        Weighed& w = it->second;
        if (fresh) {
          w.shapes = ringCandidates(m, opts_.chunks, directions(), route());
          for (const RingShape& shape : w.shapes) w.estimates.push_back(estimateCollectiveMatmul(it->first.first, model, shape));
        }
        out[i] = &w;
      }
    });
    return out;
  }
  static bool sameShapes(const std::vector<RingShape>& a, const std::vector<RingShape>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const RingShape& x, const RingShape& y) {
      return x.chunks == y.chunks && x.directions == y.directions && x.direct == y.direct;
    });
  }

  int directions() const { return opts_.directions == "one" ? 1 : opts_.directions == "both" ? 2 : 0; }
  int route() const { return opts_.route == "ring" ? 1 : opts_.route == "direct" ? 2 : 0; }

  // Every all-gather and reduce-scatter next to a matmul, in program order. A matmul both fed by
  // a decomposed all-gather and reduce-scattered is decomposed once, on its all-gather side.
  bool formWanted(CollectiveMatmulForm f) const {
    return opts_.forms == "both" || (opts_.forms == "all-gather") == (f == CollectiveMatmulForm::AllGather);
  }

  // Each program on a thread of its own (the matcher reads only its program). A backward collective
  // phases=forward refuses anyway is matched only to be counted and explained (`classify`):
  // otherwise it is no candidate, which decides nothing differently (no forward site's matmul is
  // fed by a backward all-gather, and a refused all-gather decomposes none).
  // `facts`: every op's, read (most ops do not communicate).
  void collect(Job& job, OpFactsCache& facts, Table& table, bool explaining, bool classify, bool backward_too) const {
    table.addPerProgram(job, [&](Program& p, std::vector<Table::Matched>& found) {
      absl::flat_hash_set<const Op*> gathered_matmuls;  // a set: every reduce-scatter site asks it
      for (auto& b : p.blocks)
        for (Op& op : b->inOrder()) {
          const OpFacts& f = facts.facts(op);
          if (!f.communicates) continue;
          auto coll = commCollective(op, &facts);
          if (!coll || (!backward_too && !classify && isBackward(f.phase))) continue;
          CollectiveMatmulResult r = matchCollectiveMatmul(op, *coll, job, explaining);
          if (!r.candidate) continue;
          if (r.match && r.match->form == CollectiveMatmulForm::AllGather)
            for (const SiteMatmul& mm : r.match->matmuls) gathered_matmuls.insert(mm.op);
          found.push_back({&op, *coll, true, std::move(r.match), std::move(r.refusal)});
        }
      for (Table::Matched& site : found) refuseUnwanted(site, p, gathered_matmuls, explaining, backward_too);
    });
  }

  // The pass's own refusals of a site the matcher takes: a phase, form or chunking not asked for,
  // or a matmul already decomposed on its all-gather side.
  void refuseUnwanted(Table::Matched& site, const Program& p, const absl::flat_hash_set<const Op*>& gathered_matmuls, bool explaining,
                      bool backward_too) const {
    if (!site.match) return;
    auto refuse = [&](std::string code, std::string reason) {
      site.match.reset();
      site.refusal = {std::move(code), explaining ? std::move(reason) : std::string()};
    };
    const CollectiveMatmulMatch& m = *site.match;
    if (!backward_too && isBackwardOp(*site.op))
      return refuse("backward-overlapped", "overlap-collectives hides a backward collective behind the dW GEMMs; "
                                           "cutting it only adds chunk GEMMs (phases=all decomposes it)");
    if (!formWanted(m.form)) return refuse("form-off", "forms=" + opts_.forms);
    if (opts_.chunks > 0 && m.shard->shape[0] % opts_.chunks != 0)
      return refuse("chunks-indivisible", explaining ? piecesRefusal(*m.shard) : "");
    if (m.form != CollectiveMatmulForm::ReduceScatter) return;
    if (gathered_matmuls.contains(m.matmuls.front().op))
      return refuse("shared-matmul", "its matmul is also fed by an all-gather this pass decomposes");
    if (!p2pDef(P2PKind::Send).spelling(p.dialect))
      return refuse("no-spelling", "the program's dialect has no send op to pass a partial sum on");
  }

  std::string piecesRefusal(const Var& shard) const {
    return std::string(shard.name) + ": its " + std::to_string(shard.shape[0]) + " rows along axis 0 do not divide into chunks=" +
           std::to_string(opts_.chunks) + " pieces";
  }

  // The chunks live beside what is live at the site: the member's peak may rise by memory-cap.
  Refusal memoryRefusal(const CandidateState& c, const CollectiveMatmulMatch& m, const MemoryProfile& prof, int64_t chunks) const {
    const Program& p = *c.op->block->program;
    if (c.op->block != p.blocks.front().get() || prof.live_at.empty()) return {};
    // All-gather form: the chunks and the row blocks beside the output, G itself no longer made
    // unless another op reads it; reduce-scatter form: X's row blocks and the sums landing elsewhere.
    int64_t extra = 0;
    if (m.form == CollectiveMatmulForm::AllGather) {
      extra = int64_t(m.ranks) * varBytes(*m.shard) - (m.whole_read_elsewhere ? 0 : varBytes(*m.whole));
      for (const SiteMatmul& mm : m.matmuls) extra += varBytes(*mm.op->outputs[0].args[0].var);
    } else {
      extra = int64_t(m.ranks - 1) * varBytes(*m.shard) + varBytes(*m.matmuls.front().op->inputs[0].args[0].var);
    }
    if (chunks > 1) extra += varBytes(*m.shard);  // the own shard's pieces, or O's before they are joined
    int64_t at = prof.live_at[std::min(c.op_index, prof.live_at.size() - 1)] + extra;
    if (double(at) <= double(prof.peak_bytes) * (1 + opts_.memory_cap)) return {};
    return {"memory-cap", "rank " + std::to_string(p.rank) + " would hold " + std::to_string(at) + " bytes at the site, over its peak " +
                              std::to_string(prof.peak_bytes) + " by more than memory-cap=" + fraction(opts_.memory_cap)};
  }
};

}  // namespace

PassInfo decomposeCollectiveMatmulPass() {
  using O = DecomposeCollectiveMatmul::Options;
  PassInfo info;
  info.name = "decompose-collective-matmul";
  info.description =
      "Cut an all-gather feeding a matmul, or a reduce-scatter of one, into a chunk per ring member (in chunks= pieces), "
      "overlapped with the piece GEMMs";
  info.options = machineOptions(&O::preset, &O::link);
  info.options.insert(info.options.end(), {
      bindOption(&O::mode, "mode", "auto: where the cost model says it pays; always: every legal site; off: nothing", false,
                 {"auto", "always", "off"}),
      bindOption(&O::phases, "phases", "forward: the collectives nothing hides (backward ones overlap-collectives hides); all", false,
                 {"forward", "all"}),
      bindOption(&O::forms, "forms", "which sites: both, all-gather (the same GEMM rows) or reduce-scatter (reorders a sum)", false,
                 {"both", "all-gather", "reduce-scatter"}),
      bindOption(&O::memory_cap, "memory-cap", "a site's chunks may raise a rank's peak memory at most this fraction"),
      atLeast(bindOption(&O::chunks, "chunks",
                         "row pieces per member's shard: (t-1) x chunks exchanges, each one latency; 0: per site, the "
                         "shortest ring of 1, 2 or 4"),
              0),
      bindOption(&O::directions, "directions",
                 "one: every chunk one way round the ring (t-1 steps); both: half each way (t/2 steps, half the "
                 "latencies, the same bytes); auto: per site, the shorter ring",
                 false, {"auto", "one", "both"}),
      bindOption(&O::route, "route",
                 "reduce-scatter form: ring (sums passed on and added on the way) or direct (each partial straight to "
                 "its owner over the switch, the adds off the exchanges' path); auto: per site, the shorter",
                 false, {"auto", "ring", "direct"}),
  });
  using S = DecomposeCollectiveMatmul::Stats;
  info.statistics = {
      bindStatistic(&S::gathers, "decomposed-all-gathers", StatUnit::Count, "all-gathers cut into chunks, all ranks"),
      bindStatistic(&S::scatters, "decomposed-reduce-scatters", StatUnit::Count, "reduce-scatters cut into chunks, all ranks"),
      bindStatistic(&S::saved_ns, "modelled-saving-ns", StatUnit::Nanoseconds,
                    "per decomposed ring position, the slowest member's modelled gain, summed"),
  };
  for (StatisticSpec& peak : peakBytesStatistics(&S::peak_before, &S::peak_after)) info.statistics.push_back(std::move(peak));
  info.journaled = true;  // edits only through OpBuilder, eraseOp and removeVar (collective_matmul_rewrite.cpp, row_blocks.cpp)
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<DecomposeCollectiveMatmul>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
