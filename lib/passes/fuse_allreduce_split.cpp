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
// The pass is the loop, the agreement and the rewrite; the pattern is allreduce_split_match.h,
// the cross-rank alignment analysis/ring_order.h, the new op ir/op_builder.h.
// Linear: one walk over every op, O(1) work per use of each var touched; positions are the
// blocks' cached ones, read before anything changes (they are also what messages report).
#include <unordered_set>

#include "analysis/ring_order.h"
#include "ops/op_builder.h"
#include "ir/op_role.h"
#include "passes/allreduce_split_match.h"
#include "passes/builtin_passes.h"

namespace spopt {
namespace {

struct Candidate {
  Op* allreduce = nullptr;
  Collective coll{};
  AllReduceSplitResult result;  // this rank's own checks
  bool ok() const { return result.match.has_value(); }
  bool fuse = false;            // the decision, after cross-rank agreement
  std::string code, reason;     // why not fused (this rank's refusal, or its peers')
  std::string note_code, note;  // a caveat on a fused one
};

class FuseAllreduceSplit final : public Pass {
 public:
  struct Options {
    bool reshard_only = false;
    int64_t max_fusions = -1;
    bool unsafe_skip_agreement = false;
  };
  explicit FuseAllreduceSplit(Options o) : opts_(o) {}

  bool run(Job& job, PassContext& ctx) override {
    job_ = &job;
    collectCandidates();
    AllReduceSplitEnv env;
    env.job = &job;
    env.position = [](const Op* op) { return uint32_t(op->block->indexOf(op)); };
    env.fetched = [this](const Var* v) { return fetched_[v->block->program->position].count(v->name) > 0; };
    env.awaited = [this](const Program& p, std::string_view e) { return awaited_[p.position].count(std::string(e)) > 0; };
    env.reshard_only = opts_.reshard_only;
    for (Candidate& c : cands_) {
      c.result = matchAllReduceSplit(*c.allreduce, c.coll, env);
      c.code = c.result.refusal.code;
      c.reason = c.result.refusal.reason;
    }
    decide(RingOrder(job));
    bool changed = false;
    for (Candidate& c : cands_) {
      if (!c.result.candidate) continue;
      ctx.countCandidate();
      if (!c.fuse) {
        ctx.refuse(record(c, c.code, c.reason));
        continue;
      }
      ctx.countRewritten();
      if (!c.note_code.empty()) ctx.note(record(c, c.note_code, c.note));
    }
    for (Candidate& c : cands_)
      if (c.fuse) {
        rewrite(*c.result.match);
        changed = true;
      }
    return changed;
  }

 private:
  Options opts_;
  Job* job_ = nullptr;
  std::vector<Candidate> cands_;               // every all-reduce, in program/block/op order
  std::vector<std::vector<int32_t>> cand_of_;  // [program position][op id] -> index in cands_, or -1
  std::vector<std::unordered_set<std::string_view>> fetched_;  // [program position]
  std::vector<std::unordered_set<std::string>> awaited_;       // [program position]: events_to_wait

  void collectCandidates() {
    size_t np = job_->programs.size();
    cand_of_.assign(np, {});
    fetched_.assign(np, {});
    awaited_.assign(np, {});
    for (auto& p : job_->programs) {
      cand_of_[p->position].assign(p->next_op_id, -1);
      for (auto& b : p->blocks)
        for (Op& op : b->ops) {
          if (op.hasDistAttr())
            for (std::string& e : eventsToWait(op)) awaited_[p->position].insert(std::move(e));
          auto coll = asCollective(op);
          if (!coll || coll->kind != CollectiveKind::AllReduce) continue;
          cand_of_[p->position][op.id] = int32_t(cands_.size());
          cands_.push_back({&op, *coll, {}, false, {}, {}, {}, {}});
        }
      fetched_[p->position].insert(p->fetch.begin(), p->fetch.end());
    }
  }
  Candidate* candidateAt(const Op& op) {
    int32_t i = cand_of_[op.block->program->position][op.id];
    return i < 0 ? nullptr : &cands_[size_t(i)];
  }

  ExplainRecord record(const Candidate& c, const std::string& code, const std::string& reason) const {
    ExplainRecord r;
    r.rank = c.allreduce->block->program->rank;
    r.block_idx = c.allreduce->block->idx;
    r.op_index = c.allreduce->block->indexOf(c.allreduce);
    r.op_type = std::string(c.allreduce->type);
    r.code = code;
    r.reason = reason;
    return r;
  }

  // --- cross-rank agreement: a position is fused on every member of its ring or on none ---

  void decide(const RingOrder& order) {
    int64_t fused_positions = 0;  // max-fusions counts in group (file) order, then issue order
    for (const ProcessGroup& g : job_->groups) {
      const Ring* ring = order.ring(g.ring_id);
      if (!ring) continue;
      for (size_t k = 0; k < ring->length(); ++k) decidePosition(g, *ring, k, fused_positions);
    }
  }

  void decidePosition(const ProcessGroup& g, const Ring& ring, size_t k, int64_t& fused_positions) {
    Agreement a = agreeAt(ring, k, [&](const RingIssuer&, const Op& op) -> std::optional<std::string> {
      const Candidate* c = candidateAt(op);
      if (!c) return "its collective #" + std::to_string(k) + " is " + std::string(op.type) + ", not an all-reduce";
      if (!c->ok()) return c->reason;
      return std::nullopt;
    });
    bool within_limit = opts_.max_fusions < 0 || fused_positions < opts_.max_fusions;
    if (a.agree && within_limit) ++fused_positions;
    for (const RingIssuer& m : ring.members) {
      Candidate* c = k < m.ops.size() ? candidateAt(*m.ops[k]) : nullptr;
      if (!c || !c->ok()) continue;  // keeps its own reason
      if (!a.agree && !opts_.unsafe_skip_agreement) {
        c->code = "peer-refused";
        c->reason = "rank " + std::to_string(a.blocker_rank) + " cannot fuse collective #" + std::to_string(k) + " of " +
                    groupText(g) + " (" + a.why + "), so no rank of ring " + std::to_string(g.ring_id) + " does";
        continue;
      }
      if (a.agree && !within_limit) {
        c->code = "limit";
        c->reason = "max-fusions=" + std::to_string(opts_.max_fusions) + " collectives already fused";
        continue;
      }
      c->fuse = true;
      if (!ring.absent.empty()) {
        std::string list;
        for (size_t i = 0; i < ring.absent.size(); ++i) list += (i ? ", " : "") + std::to_string(ring.absent[i]);
        c->note_code = "peers-absent";
        c->note = "cross-rank agreement could not be checked: rank" + std::string(ring.absent.size() > 1 ? "s " : " ") + list +
                  " of " + groupText(g) + (ring.absent.size() > 1 ? " are" : " is") + " not in this file";
      } else if (!a.agree) {
        c->note_code = "agreement-skipped";
        c->note = "fused although rank " + std::to_string(a.blocker_rank) + " cannot fuse collective #" + std::to_string(k) +
                  " of " + groupText(g) + " (" + a.why + ") (unsafe-skip-agreement=true)";
      }
    }
  }

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
      rs.op().fields.push_back({"pir", job.arena.store(R"({"attr_types":{"ring_id":"int32","nranks":"int32"}})")});
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
