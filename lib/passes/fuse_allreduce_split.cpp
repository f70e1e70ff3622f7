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
#include "ir/json_text.h"
#include "passes/builtin_passes.h"

namespace spopt {
namespace {

struct Candidate {
  Program* program = nullptr;
  Op* allreduce = nullptr;
  Collective coll{};
  bool counted = false;  // its result is read by a split: a candidate of this pass on this rank
  bool ok = false;       // passes this rank's own checks
  std::string code, reason;  // why not, when !ok
  bool fuse = false;         // the decision, after cross-rank agreement
  std::string note_code, note;  // a caveat on a fused one

  // Filled in as the checks pass.
  Op* split = nullptr;
  Var *x = nullptr, *y = nullptr, *kept = nullptr;
  std::vector<Var*> dead;
  const ProcessGroup* group = nullptr;
};

std::string groupText(const ProcessGroup& g) {
  std::string s = "ring " + std::to_string(g.ring_id) + " [";
  for (size_t i = 0; i < g.ranks.size(); ++i) s += (i ? "," : "") + std::to_string(g.ranks[i]);
  return s + "]";
}

std::string reduceName(ReduceOp r) {
  switch (r) {
    case ReduceOp::Sum: return "SUM";
    case ReduceOp::Max: return "MAX";
    case ReduceOp::Min: return "MIN";
    case ReduceOp::Prod: return "PROD";
    case ReduceOp::Avg: return "AVG";
  }
  return "reduce_type " + std::to_string(static_cast<int>(r));
}

class FuseAllreduceSplit final : public Pass {
 public:
  explicit FuseAllreduceSplit(const OptionValues& o)
      : reshard_only_(o.getBool("reshard-only")),
        max_fusions_(o.getInt("max-fusions")),
        skip_agreement_(o.getBool("unsafe-skip-agreement")) {}

  void run(Job& job, PassContext& ctx) override {
    job_ = &job;
    index();
    for (Candidate& c : cands_) c.ok = check(c);
    decide();
    for (Candidate& c : cands_) {
      if (!c.counted) continue;
      ctx.countCandidate();
      if (!c.fuse) {
        ctx.refuse(record(c, c.code, c.reason));
        continue;
      }
      ctx.countRewritten();
      if (!c.note_code.empty()) ctx.note(record(c, c.note_code, c.note));
    }
    for (Candidate& c : cands_)
      if (c.fuse) rewrite(c);
  }

 private:
  bool reshard_only_;
  int64_t max_fusions_;
  bool skip_agreement_;
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

  std::string opText(const Op* op, const Block* here) const {
    std::string s = "op " + std::to_string(pos(op)) + " (" + std::string(op->type) + ")";
    if (op->block != here) s += " of block " + std::to_string(op->block->idx);
    return s;
  }
  // The first of `ops` other than `except`, in block then op order: deterministic messages.
  const Op* firstOther(const OpList& ops, const Op* except) const {
    const Op* best = nullptr;
    for (const Op* o : ops) {
      if (o == except) continue;
      if (!best || std::make_pair(o->block->position, pos(o)) < std::make_pair(best->block->position, pos(best))) best = o;
    }
    return best;
  }
  std::string quoted(const Var* v) const { return "\"" + std::string(v->name) + "\""; }

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

  // --- this rank's own checks ---

  // Sets code and reason and returns false. Reasons are built even when not explaining: a peer's
  // refusal may quote them, and each costs O(1).
  bool refuse(Candidate& c, const char* code, std::string reason) {
    c.code = code;
    c.reason = std::move(reason);
    return false;
  }

  bool check(Candidate& c) {
    Op& ar = *c.allreduce;
    const Slot* in = ar.input(c.coll.in_slot);
    const Slot* out = ar.output(c.coll.out_slot);
    if (!in || !out || in->args.size() != 1 || out->args.size() != 1)
      return refuse(c, "malformed", std::string(ar.type) + " needs exactly one " + std::string(c.coll.in_slot) +
                                        " input and one " + std::string(c.coll.out_slot) + " output");
    c.x = in->args[0].var;
    c.y = out->args[0].var;
    Var& y = *c.y;
    // Is this all-reduce a candidate at all: is its result read by a split?
    for (const Op* r : y.readers)
      if (r->type == "split") c.counted = true;
    if (!c.counted) {
      const Op* r = firstOther(y.readers, nullptr);
      return refuse(c, "no-split", r ? "its result " + quoted(&y) + " is read by " + opText(r, ar.block) + ", not by a split"
                                     : "its result " + quoted(&y) + " is not read by a split");
    }
    if (c.coll.reduce != ReduceOp::Sum)
      return refuse(c, "not-sum", "the all-reduce reduces with " + reduceName(c.coll.reduce) + ", not SUM");

    // The ring and this rank's place in it.
    c.group = job_->group(c.coll.ring_id);
    if (!c.group) return refuse(c, "no-group", "ring " + std::to_string(c.coll.ring_id) + " has no process group");
    const ProcessGroup& g = *c.group;
    int position = g.positionOf(c.program->rank);
    if (position < 0)
      return refuse(c, "not-member", "rank " + std::to_string(c.program->rank) + " is not a member of " + groupText(g));
    int64_t n = int64_t(g.ranks.size());
    if (n < 2) return refuse(c, "ring-too-small", groupText(g) + " has one rank: there is nothing to scatter");

    // The all-reduce result: written only here, read only by one split, not kept.
    if (c.x == c.y) return refuse(c, "in-place", "the all-reduce writes its result in place over its input " + quoted(c.x));
    if (y.writers.size() != 1)
      return refuse(c, "result-written", "the all-reduce result " + quoted(&y) + " is also written by " + opText(firstOther(y.writers, &ar), ar.block));
    if (isFetched(&y)) return refuse(c, "result-fetched", "the all-reduce result " + quoted(&y) + " is fetched");
    if (y.persistable) return refuse(c, "result-persistable", "the all-reduce result " + quoted(&y) + " is persistable");
    const Op* split = nullptr;
    for (const Op* r : y.readers)
      if (r->type == "split") split = r;
    if (const Op* other = firstOther(y.readers, split))
      return refuse(c, "result-multi-use", "the all-reduce result " + quoted(&y) + " is also read by " + opText(other, ar.block));
    c.split = const_cast<Op*>(split);
    Op& s = *c.split;
    if (s.block != ar.block)
      return refuse(c, "other-block", "the split is in block " + std::to_string(s.block->idx) + ", the all-reduce in block " + std::to_string(ar.block->idx));
    if (pos(&s) < pos(&ar))
      return refuse(c, "split-first", "the split (" + opText(&s, ar.block) + ") runs before the all-reduce");
    if (reshard_only_) {
      auto ns = s.attrs.getString("op_namescope");
      if (!ns || ns->find("/auto_parallel/reshard") == std::string::npos)
        return refuse(c, "not-reshard", "the split (" + opText(&s, ar.block) + ") was not inserted by resharding (reshard-only=true)");
    }
    if (!checkSplitShape(c, s, n)) return false;
    if (!checkSplitOutputs(c, s, position)) return false;
    if (!checkKeptAccess(c)) return false;
    return checkStreams(c);
  }

  bool checkSplitShape(Candidate& c, const Op& s, int64_t n) {
    for (const Slot& sl : s.inputs)
      if (sl.name != "X")
        return refuse(c, "split-dynamic", "the split takes " + std::string(sl.name) + " as a tensor; only attribute axis/num/sections are understood");
    const Slot* xs = s.input("X");
    if (!xs || xs->args.size() != 1)
      return refuse(c, "malformed", "the split (" + opText(&s, s.block) + ") needs exactly one X input");
    if (s.outputs.size() != 1 || s.outputs[0].name != "Out")
      return refuse(c, "malformed", "the split (" + opText(&s, s.block) + ") needs exactly one output slot, Out");
    const auto* axis_raw = s.attrs.find("axis");
    auto axis = axis_raw ? rawToInt(*axis_raw) : std::optional<int64_t>(0);
    if (!axis) return refuse(c, "split-axis", "split axis " + std::string(*axis_raw) + " is not an integer");
    int64_t rank = int64_t(c.y->shape.size());
    int64_t norm = *axis < 0 ? *axis + rank : *axis;
    if (norm != 0) {
      std::string shown = std::to_string(*axis);
      if (*axis < 0) shown += " (" + std::to_string(norm) + " of a " + std::to_string(rank) + "-D tensor)";
      return refuse(c, "split-axis", "split axis " + shown + " is not 0");
    }
    if (rank == 0) return refuse(c, "split-axis", "the split input " + quoted(c.y) + " is a scalar");
    int64_t num = s.attrs.getInt("num").value_or(0);
    if (num > 0) {
      if (num != n) return refuse(c, "split-num", "split num " + std::to_string(num) + " != ring size " + std::to_string(n));
    } else {
      auto sections = s.attrs.getIntArray("sections").value_or(std::vector<int64_t>{});
      if (sections.empty()) return refuse(c, "split-num", "the split has neither num nor sections");
      if (int64_t(sections.size()) != n)
        return refuse(c, "split-num", "split into " + std::to_string(sections.size()) + " sections != ring size " + std::to_string(n));
      bool equal = sections[0] > 0;
      for (int64_t v : sections) equal &= v == sections[0];
      if (!equal) return refuse(c, "split-unequal", "split sections " + intArrayToRaw(sections) + " are not equal");
    }
    int64_t outs = int64_t(s.outputs[0].args.size());
    if (outs != n) return refuse(c, "split-num", "the split has " + std::to_string(outs) + " outputs != ring size " + std::to_string(n));
    return true;
  }

  std::string useText(const Var* v, const Block* here) const {
    if (const Op* r = firstOther(v->readers, nullptr)) return "read by " + opText(r, here);
    return isFetched(v) ? "fetched" : "persistable";
  }

  bool checkSplitOutputs(Candidate& c, const Op& s, int position) {
    const auto& args = s.outputs[0].args;
    std::unordered_set<const Var*> seen;
    std::vector<size_t> used;
    for (size_t i = 0; i < args.size(); ++i) {
      const Var* v = args[i].var;
      if (!seen.insert(v).second) return refuse(c, "split-out-twice", "the split writes " + quoted(v) + " twice");
      if (!v->readers.empty() || isFetched(v) || v->persistable) used.push_back(i);
    }
    if (used.empty()) return refuse(c, "split-unused", "no split output is used");
    if (used.size() > 1) {
      std::string list;
      for (size_t k = 0; k < used.size() && k < 4; ++k)
        list += (k ? ", " : "") + std::to_string(used[k]) + " " + quoted(args[used[k]].var) + " (" + useText(args[used[k]].var, s.block) + ")";
      if (used.size() > 4) list += ", ...";
      return refuse(c, "split-multi-use", std::to_string(used.size()) + " split outputs are used, not one: " + list);
    }
    size_t k = used[0];
    if (int64_t(k) != position)
      return refuse(c, "wrong-chunk", "split keeps output " + std::to_string(k) + " but rank " + std::to_string(c.program->rank) +
                                          " is at position " + std::to_string(position) + " of " + groupText(*c.group));
    c.kept = args[k].var;
    if (c.kept == c.x)
      return refuse(c, "in-place", "the kept chunk " + quoted(c.kept) + " is the all-reduce input itself");
    if (c.kept->dtype != c.x->dtype)
      return refuse(c, "dtype", "the kept chunk " + quoted(c.kept) + " is " + std::string(dtypeName(c.kept->dtype)) +
                                    " but the all-reduce input " + quoted(c.x) + " is " + std::string(dtypeName(c.x->dtype)));
    // The dead outputs are removed: nothing else may write them either. (Other writes of the kept
    // chunk are checked by checkKeptAccess.)
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == k) continue;
      if (const Op* w = firstOther(args[i].var->writers, &s))
        return refuse(c, "split-out-written", "split output " + std::to_string(i) + " " + quoted(args[i].var) + " is also written by " + opText(w, s.block));
      c.dead.push_back(args[i].var);
    }
    return true;
  }

  // The reduce-scatter writes the kept chunk where the all-reduce was, earlier than the split
  // did: nothing between the two may read or write that var, and accesses from other blocks
  // cannot be placed relative to them, so they refuse too.
  bool checkKeptAccess(Candidate& c) {
    const Op &ar = *c.allreduce, &s = *c.split;
    uint32_t lo = pos(&ar), hi = pos(&s);
    for (int dir = 0; dir < 2; ++dir) {
      for (const Op* o : dir == 0 ? c.kept->readers : c.kept->writers) {
        if (o == &s) continue;
        const char* verb = dir == 0 ? "read" : "written";
        if (o->block != ar.block)
          return refuse(c, "kept-other-block", "the kept chunk " + quoted(c.kept) + " is " + verb + " by " + opText(o, ar.block) +
                                                   ", which cannot be ordered against the all-reduce");
        if (pos(o) > lo && pos(o) < hi)
          return refuse(c, "kept-between", "the kept chunk " + quoted(c.kept) + " is " + verb + " by " + opText(o, ar.block) +
                                               ", between the all-reduce and the split");
      }
    }
    return true;
  }

  // Dropping an op that records or waits for cross-stream events would drop that dependency.
  bool checkStreams(Candidate& c) {
    for (const Op* o : {static_cast<const Op*>(c.allreduce), static_cast<const Op*>(c.split)}) {
      if (!o->hasDistAttr()) continue;
      auto rec = o->dist_attr.getString("event_to_record");
      auto waits = o->dist_attr.find("events_to_wait");
      bool waits_some = waits && rawToStringArray(*waits).value_or(std::vector<std::string>{"?"}).size() > 0;
      if ((rec && !rec->empty()) || waits_some)
        return refuse(c, "stream-events", opText(o, o->block) + " takes part in cross-stream events; fusing would drop them");
    }
    return true;
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
      if (!blocker_why.empty() || (c && c->ok)) continue;
      blocker_rank = rank;
      if (!c)
        blocker_why = k < ops.size() ? "its collective #" + std::to_string(k) + " is " + std::string(ops[k]->type) + ", not an all-reduce"
                                     : "it issues no collective #" + std::to_string(k);
      else
        blocker_why = c->reason;
    }
    bool agree = blocker_why.empty();
    bool within_limit = max_fusions_ < 0 || fused_positions < max_fusions_;
    if (agree && within_limit) ++fused_positions;
    for (Candidate* c : here) {
      if (!c->ok) continue;  // keeps its own reason
      if (!agree && !skip_agreement_) {
        c->code = "peer-refused";
        c->reason = "rank " + std::to_string(blocker_rank) + " cannot fuse collective #" + std::to_string(k) + " of " + groupText(g) +
                    " (" + blocker_why + "), so no rank of ring " + std::to_string(g.ring_id) + " does";
        continue;
      }
      if (agree && !within_limit) {
        c->code = "limit";
        c->reason = "max-fusions=" + std::to_string(max_fusions_) + " collectives already fused";
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

  void rewrite(Candidate& c) {
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
  PassInfo info;
  info.name = "fuse-allreduce-split";
  info.description = "Fuse a SUM all-reduce whose result is split along axis 0 into the ring's chunks into a reduce-scatter";
  info.options = {
      {"reshard-only", OptionKind::Bool, "false",
       "only fuse splits inserted by resharding (op_namescope containing /auto_parallel/reshard), as the seed did"},
      {"max-fusions", OptionKind::Int, "-1",
       "fuse at most this many collectives (each on all its ranks), in ring then issue order; -1: no limit (for bisecting)"},
      {"unsafe-skip-agreement", OptionKind::Bool, "false",
       "testing only: fuse on each rank by its own checks, ignoring its peers; can desynchronise a ring, which the verifier "
       "must then catch (exit 3)",
       /*hidden=*/true},
  };
  info.create = [](const OptionValues& o) { return std::make_unique<FuseAllreduceSplit>(o); };
  return info;
}

}  // namespace spopt
