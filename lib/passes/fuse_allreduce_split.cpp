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
// Linear: one walk over every op, O(1) work per use of each var touched; op positions are
// computed once per program, before anything changes (they are also what messages report).
#include <algorithm>
#include <unordered_set>

#include "analysis/collectives.h"
#include "passes/allreduce_split_match.h"
#include "passes/builtin_passes.h"

namespace spopt {
namespace {

struct Candidate {
  Program* program = nullptr;
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
    index();
    AllReduceSplitEnv env;
    env.job = &job;
    env.position = [this](const Op* op) { return pos(op); };
    env.fetched = [this](const Var* v) { return isFetched(v); };
    env.reshard_only = opts_.reshard_only;
    for (Candidate& c : cands_) {
      c.result = matchAllReduceSplit(*c.allreduce, c.coll, env);
      c.code = c.result.refusal.code;
      c.reason = c.result.refusal.reason;
    }
    decide();
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
  std::vector<Candidate> cands_;                      // every all-reduce, in program/block/op order
  std::vector<std::vector<int32_t>> cand_of_;         // [program position][op id] -> index in cands_, or -1
  std::vector<std::vector<uint32_t>> pos_;            // [program position][op id] -> index in block
  std::vector<std::unordered_set<std::string_view>> fetched_;  // [program position]
  std::vector<std::map<int64_t, std::vector<const Op*>>> rings_;  // [program position] -> ring -> issue order

  // --- positions and descriptions (for messages and ordering checks) ---

  // One walk over every op: positions, each ring's collectives in issue order (the same order as
  // collectivesByRing), and the all-reduces, which are checked once every position is known.
  void index() {
    size_t np = job_->programs.size();
    pos_.assign(np, {});
    cand_of_.assign(np, {});
    fetched_.assign(np, {});
    rings_.assign(np, {});
    for (auto& p : job_->programs) {
      auto& v = pos_[p->position];
      v.assign(p->next_op_id, 0);
      cand_of_[p->position].assign(p->next_op_id, -1);
      for (auto& b : p->blocks) {
        uint32_t i = 0;
        for (Op& op : b->ops) {
          v[op.id] = i++;
          auto coll = asCollective(op);
          if (!coll || !communicates(*coll)) continue;
          rings_[p->position][coll->ring_id].push_back(&op);
          if (coll->kind != CollectiveKind::AllReduce) continue;
          cand_of_[p->position][op.id] = int32_t(cands_.size());
          Candidate c;
          c.program = p.get();
          c.allreduce = &op;
          c.coll = *coll;
          cands_.push_back(std::move(c));
        }
      }
      fetched_[p->position].insert(p->fetch.begin(), p->fetch.end());
    }
  }
  uint32_t pos(const Op* op) const { return pos_[op->block->program->position][op->id]; }
  bool isFetched(const Var* v) const { return fetched_[v->block->program->position].count(v->name) > 0; }

  ExplainRecord record(const Candidate& c, const std::string& code, const std::string& reason) const {
    ExplainRecord r;
    r.rank = c.program->rank;
    r.block_idx = c.allreduce->block->idx;
    r.op_index = pos(c.allreduce);
    r.op_type = std::string(c.allreduce->type);
    r.code = code;
    r.reason = reason;
    return r;
  }

  // --- cross-rank agreement ---

  void decide() {
    int64_t fused_positions = 0;
    for (const ProcessGroup& g : job_->groups) {
      // The ring's collectives on each member rank present, in issue order.
      std::vector<std::pair<int64_t, const std::vector<const Op*>*>> members;
      std::vector<int64_t> absent;
      for (int64_t r : g.ranks) {
        Program* p = job_->program(r);
        if (!p) {
          absent.push_back(r);
          continue;
        }
        auto& rings = rings_[p->position];
        auto it = rings.find(g.ring_id);
        members.emplace_back(r, it == rings.end() ? &kNoOps : &it->second);
      }
      size_t len = 0;
      for (auto& m : members) len = std::max(len, m.second->size());
      for (size_t k = 0; k < len; ++k) decidePosition(g, members, absent, k, fused_positions);
    }
  }

  static inline const std::vector<const Op*> kNoOps{};

  void decidePosition(const ProcessGroup& g, const std::vector<std::pair<int64_t, const std::vector<const Op*>*>>& members,
                      const std::vector<int64_t>& absent, size_t k, int64_t& fused_positions) {
    std::vector<Candidate*> here;  // this position's all-reduce on each member present
    int64_t blocker_rank = 0;
    std::string blocker_why;
    for (const auto& [rank, ops_ptr] : members) {
      const auto& ops = *ops_ptr;
      Candidate* c = nullptr;
      if (k < ops.size()) {
        int32_t i = cand_of_[ops[k]->block->program->position][ops[k]->id];
        if (i >= 0) c = &cands_[size_t(i)];
      }
      if (c) here.push_back(c);
      if (!blocker_why.empty() || (c && c->ok())) continue;
      blocker_rank = rank;
      if (!c)
        blocker_why = k < ops.size() ? "its collective #" + std::to_string(k) + " is " + std::string(ops[k]->type) + ", not an all-reduce"
                                     : "it issues no collective #" + std::to_string(k);
      else
        blocker_why = c->reason;
    }
    bool agree = blocker_why.empty();
    bool within_limit = opts_.max_fusions < 0 || fused_positions < opts_.max_fusions;
    if (agree && within_limit) ++fused_positions;
    for (Candidate* c : here) {
      if (!c->ok()) continue;  // keeps its own reason
      if (!agree && !opts_.unsafe_skip_agreement) {
        c->code = "peer-refused";
        c->reason = "rank " + std::to_string(blocker_rank) + " cannot fuse collective #" + std::to_string(k) + " of " + groupText(g) +
                    " (" + blocker_why + "), so no rank of ring " + std::to_string(g.ring_id) + " does";
        continue;
      }
      if (agree && !within_limit) {
        c->code = "limit";
        c->reason = "max-fusions=" + std::to_string(opts_.max_fusions) + " collectives already fused";
        continue;
      }
      c->fuse = true;
      if (!absent.empty()) {
        std::string list;
        for (size_t i = 0; i < absent.size(); ++i) list += (i ? ", " : "") + std::to_string(absent[i]);
        c->note_code = "peers-absent";
        c->note = "cross-rank agreement could not be checked: rank" + std::string(absent.size() > 1 ? "s " : " ") + list + " of " +
                  groupText(g) + (absent.size() > 1 ? " are" : " is") + " not in this file";
      } else if (!agree) {
        c->note_code = "agreement-skipped";
        c->note = "fused although rank " + std::to_string(blocker_rank) + " cannot fuse collective #" + std::to_string(k) + " of " +
                  groupText(g) + " (unsafe-skip-agreement=true)";
      }
    }
  }

  // --- the rewrite ---

  void rewrite(const AllReduceSplitMatch& c) {
    Job& job = *job_;
    Op& ar = *c.allreduce;
    Block& b = *ar.block;
    Op rs = makeOp(job, collectiveOpType(CollectiveKind::ReduceScatter, c.coll.legacy));
    addInput(rs, job, c.coll.in_slot, {c.x->name});
    rs.inputs.back().args[0].var = c.x;
    addOutput(rs, job, c.coll.out_slot, {c.kept->name});
    rs.outputs.back().args[0].var = c.kept;
    rs.attrs.setRaw(job.arena, "ring_id", *ar.attrs.find("ring_id"));
    rs.attrs.setInt(job.arena, "nranks", int64_t(c.group->ranks.size()));
    if (auto* ns = ar.attrs.find("op_namescope")) rs.attrs.setRaw(job.arena, "op_namescope", *ns);
    if (auto* role = ar.attrs.find("op_role")) rs.attrs.setRaw(job.arena, "op_role", *role);
    else if (auto* srole = c.split->attrs.find("op_role")) rs.attrs.setRaw(job.arena, "op_role", *srole);
    // Mesh and chunk from the input var (the seed's choice), else from the all-reduce itself.
    const JsonObject* mesh_src = c.x->hasDistAttr() ? &c.x->dist_attr : ar.hasDistAttr() ? &ar.dist_attr : nullptr;
    if (mesh_src) {
      if (auto* mesh = mesh_src->find("process_mesh")) rs.dist_attr.setRaw(job.arena, "process_mesh", *mesh);
      if (auto* chunk = mesh_src->find("chunk_id")) rs.dist_attr.setRaw(job.arena, "chunk_id", *chunk);
      rs.dist_attr.setString(job.arena, "execution_stream", "default");
      rs.fields.push_back({"dist_attr", {}});
    }
    b.insertOp(ar.self, std::move(rs));
    b.eraseOp(c.split);
    b.eraseOp(&ar);
    c.y->block->removeVar(c.y);
    for (Var* d : c.dead) d->block->removeVar(d);
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
