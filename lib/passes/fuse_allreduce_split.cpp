// Pass fuse-allreduce-split: a SUM all-reduce whose result is only split into n equal chunks
// along axis 0, of which the rank keeps only its own (n = the ring's group size), is a
// reduce-scatter. The rewrite halves the bytes on the wire and never materialises the full sum.
//
// Unlike the seed (shared/seed), which matched ops by position, this pass follows data flow
// (Var::readers/writers) and checks everything that makes the rewrite exact:
//  - the all-reduce result has no other use and exactly one split output is used;
//  - the split is along axis 0 into exactly n equal parts;
//  - the kept output's index is this rank's position in the ring (ProcessGroup::positionOf);
//  - moving the kept chunk's definition up to the all-reduce's place changes no other access.
// Collectives pair up across ranks by order of issue on a ring, so a collective position is fused
// on every member rank or on none: otherwise the ring desynchronises and NCCL hangs.
//
// The new op keeps the all-reduce's dialect (c_reducescatter X/Out or reduce_scatter x/out) and
// its place, so the ring's collective order is unchanged. Its op_role is the all-reduce's (the
// new op runs where the all-reduce ran, in its phase; the seed took the consumer's role, which is
// ambiguous when the chunk has several consumers); the split's role when the all-reduce has none.
// Its dist_attr takes process_mesh and chunk_id from the all-reduce input's var, as the seed
// does, and runs on the default stream.
//
// The pass is its options and the rewrite; the pattern is allreduce_split_match.h, the candidate
// table and the every-member-or-none decision collective_rewrite_driver.h, the new op
// ir/op_builder.h.
// Linear: one walk over every op, O(1) work per use of each var touched; positions are the
// blocks' cached ones, read before anything changes (they are also what messages report).
#include <unordered_set>

#include "analysis/ring_order.h"
#include "ops/op_builder.h"
#include "ir/op_role.h"
#include "passes/allreduce_split_match.h"
#include "passes/builtin_passes.h"
#include "passes/collective_rewrite_driver.h"

namespace spopt {
namespace {

class FuseAllreduceSplit final : public Pass {
 public:
  struct Options {
    bool reshard_only = false;
    int64_t max_fusions = -1;
    bool unsafe_skip_agreement = false;
  };
  explicit FuseAllreduceSplit(Options o) : opts_(o) {}

  bool run(Job& job, PassContext& ctx) override {
    CollectiveRewriteDriver<AllReduceSplitMatch> table(job, {"fuse", "fused", "fusion", "an all-reduce"});
    // Each program's all-reduces are matched on a thread of their own (the matcher reads only the
    // all-reduce's program), then entered in program order. Every all-reduce is entered: one that
    // is no candidate still tells its peers why.
    struct ProgramSets {
      std::unordered_set<std::string_view> fetched;
      std::unordered_set<std::string> awaited;  // events_to_wait
    };
    std::vector<ProgramSets> sets(job.programs.size());
    AllReduceSplitEnv env;
    env.job = &job;
    env.position = [](const Op* op) { return uint32_t(op->block->indexOf(op)); };
    env.fetched = [&](const Var* v) { return sets[v->block->program->position].fetched.count(v->name) > 0; };
    env.awaited = [&](const Program& p, std::string_view e) { return sets[p.position].awaited.count(std::string(e)) > 0; };
    env.reshard_only = opts_.reshard_only;
    OpFactsCache& facts = ctx.facts(job);  // read once for the pipeline: most ops neither communicate nor wait
    table.addPerProgram(job, [&](Program& p, std::vector<decltype(table)::Matched>& found) {
      ProgramSets& mine = sets[p.position];
      std::vector<std::pair<Op*, Collective>> allreduces;
      for (auto& b : p.blocks)
        for (Op& op : b->inOrder()) {
          const OpFacts& f = facts.facts(op);
          if (f.has_events)
            for (std::string& e : eventsToWait(op)) mine.awaited.insert(std::move(e));
          auto coll = facts.collective(op);
          if (coll && coll->kind == CollectiveKind::AllReduce) allreduces.emplace_back(&op, *coll);
        }
      mine.fetched.insert(p.fetch.begin(), p.fetch.end());
      for (auto& [op, coll] : allreduces) {
        AllReduceSplitResult r = matchAllReduceSplit(*op, coll, env);
        found.push_back({op, coll, r.candidate, std::move(r.match), std::move(r.refusal)});
      }
    });
    int64_t fused_positions = 0;  // max-fusions counts in group (file) order, then issue order
    DecideOptions decide;
    decide.skip_agreement = opts_.unsafe_skip_agreement;
    decide.skip_agreement_option = "unsafe-skip-agreement=true";
    decide.check = [&](const AgreedPosition&) -> Refusal {
      if (opts_.max_fusions >= 0 && fused_positions >= opts_.max_fusions)
        return {std::string(refusal_code::kLimit), "max-fusions=" + std::to_string(opts_.max_fusions) + " collectives already fused"};
      ++fused_positions;
      return {};
    };
    table.decide(ctx.receivedRingOrder(job), decide);
    table.report(ctx);
    return table.rewriteChanged(job, [this](const AllReduceSplitMatch& m) { rewrite(m); }) > 0;
  }

 private:
  Options opts_;

  // --- the rewrite: a reduce-scatter at the all-reduce's place, in its dialect ---

  void rewrite(const AllReduceSplitMatch& m) {
    Op& ar = *m.allreduce;
    Block& b = *ar.block;
    CollectiveDesc desc{CollectiveKind::ReduceScatter, m.coll.ring_id, int64_t(m.group->ranks.size())};
    NewOp rs = OpBuilder(b).collective(desc, m.x, m.kept);
    rs.attrRaw("ring_id", *ar.attrs.find("ring_id")).copyAttrs(ar, {"op_namescope", "op_role"});
    if (!ar.attrs.find("op_role")) rs.copyAttrs(*m.split, {"op_role"});
    if (m.coll.dialect == Dialect::Pir) {
      // PIR keeps the communication stream of the all-reduce, and Paddle's int32 attribute types.
      if (ar.hasDistAttr()) rs.copyDistAttr(ar.dist_attr, {"execution_stream"});
      Job& job = *b.program->job;
      rs.op().fields.push_back({"pir", job.editArena().store(R"({"attr_types":{"ring_id":"int32","nranks":"int32"}})")});
    } else {
      // Mesh and chunk from the input var (the seed's choice), else from the all-reduce itself.
      const JsonObject* mesh_src = m.x->hasDistAttr() ? &m.x->dist_attr : ar.hasDistAttr() ? &ar.dist_attr : nullptr;
      if (mesh_src) rs.copyDistAttr(*mesh_src, {"process_mesh", "chunk_id"}).stream("default");
    }
    rs.insertBefore(ar);
    b.eraseOp(m.split);
    for (Op* o : m.extra_ops) o->block->eraseOp(o);
    b.eraseOp(&ar);
    m.y->block->removeVar(m.y);
    for (Var* d : m.dead) d->block->removeVar(d);
    for (Var* v : m.extra_vars) v->block->removeVar(v);
  }
};

}  // namespace

PassInfo fuseAllreduceSplitPass() {
  using O = FuseAllreduceSplit::Options;
  PassInfo info;
  info.name = "fuse-allreduce-split";
  info.journaled = true;  // edits only through OpBuilder, eraseOp and removeVar
  info.description = "Fuse a SUM all-reduce whose result is split along axis 0 into the ring's chunks into a reduce-scatter";
  info.options = {
      bindOption(&O::reshard_only, "reshard-only",
                 "only fuse splits inserted by resharding (op_namescope containing /auto_parallel/reshard), as the seed did"),
      bindOption(&O::max_fusions, "max-fusions",
                 "fuse at most this many collectives (each on all its ranks), in ring then issue order; -1: no limit (for bisecting)"),
      bindOption(&O::unsafe_skip_agreement, "unsafe-skip-agreement",
                 "testing only: fuse on each rank by its own checks, ignoring its peers; can desynchronise a ring, which the verifier "
                 "must then catch (exit 3)",
                 /*hidden=*/true),
  };
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<FuseAllreduceSplit>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
