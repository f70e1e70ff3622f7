// The all-reduce + split pattern of fuse-allreduce-split, checked on one rank
// (allreduce_split_match.h). Every refusal has a code and a sentence; the checks are the ones
// docs/passes.md lists, in that order.
#include "passes/allreduce_split_match.h"

#include <unordered_set>

#include "analysis/split_sections.h"
#include "ir/json_text.h"
#include "ops/op_def.h"

namespace spopt {

namespace {

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

// One match attempt: the checks fill `m` as they pass, or set `refusal` and return false.
class Matcher {
 public:
  Matcher(Op& allreduce, const Collective& coll, const AllReduceSplitEnv& env) : env_(env) {
    m_.allreduce = &allreduce;
    m_.coll = coll;
  }

  AllReduceSplitResult run() {
    AllReduceSplitResult r;
    bool ok = check();
    r.candidate = candidate_;
    if (ok) r.match = std::move(m_);
    else r.refusal = std::move(refusal_);
    return r;
  }

 private:
  const AllReduceSplitEnv& env_;
  AllReduceSplitMatch m_;
  bool candidate_ = false;
  const Op* assign_ = nullptr;  // PIR: the assign between the all-reduce and the split
  Refusal refusal_;

  uint32_t pos(const Op* op) const { return env_.position(op); }
  bool isFetched(const Var* v) const { return env_.fetched(v); }
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


  // --- the checks, in the order docs/passes.md lists them ---

  bool refuse(const char* code, std::string reason) {
    refusal_ = {code, std::move(reason)};
    return false;
  }

  bool check() {
    Op& ar = *m_.allreduce;
    const Slot* in = ar.input(m_.coll.in_slot);
    const Slot* out = ar.output(m_.coll.out_slot);
    if (!in || !out || in->args.size() != 1 || out->args.size() != 1)
      return refuse("malformed", std::string(ar.type) + " needs exactly one " + std::string(m_.coll.in_slot) +
                                        " input and one " + std::string(m_.coll.out_slot) + " output");
    m_.x = in->args[0].var;
    m_.y = out->args[0].var;
    Var& y = *m_.y;
    // Is this all-reduce a candidate at all: is its result read by a split?
    const Op* split = findSplit();
    candidate_ = split != nullptr;
    if (!candidate_) {
      const Op* r = firstOther(y.readers, nullptr);
      return refuse("no-split", r ? "its result " + quoted(&y) + " is read by " + opText(r, ar.block) + ", not by a split"
                                     : "its result " + quoted(&y) + " is not read by a split");
    }
    if (m_.coll.reduce != ReduceOp::Sum)
      return refuse("not-sum", "the all-reduce reduces with " + reduceName(m_.coll.reduce) + ", not SUM");

    // The ring and this rank's place in it.
    m_.group = env_.job->group(m_.coll.ring_id);
    if (!m_.group) return refuse("no-group", "ring " + std::to_string(m_.coll.ring_id) + " has no process group");
    const ProcessGroup& g = *m_.group;
    int position = g.positionOf(m_.allreduce->block->program->rank);
    if (position < 0)
      return refuse("not-member", "rank " + std::to_string(m_.allreduce->block->program->rank) + " is not a member of " + groupText(g));
    int64_t n = int64_t(g.ranks.size());
    if (n < 2) return refuse("ring-too-small", groupText(g) + " has one rank: there is nothing to scatter");

    // The all-reduce result: written only here, read only by one split, not kept.
    if (m_.x == m_.y) return refuse("in-place", "the all-reduce writes its result in place over its input " + quoted(m_.x));
    if (y.writers.size() != 1)
      return refuse("result-written", "the all-reduce result " + quoted(&y) + " is also written by " + opText(firstOther(y.writers, &ar), ar.block));
    if (isFetched(&y)) return refuse("result-fetched", "the all-reduce result " + quoted(&y) + " is fetched");
    if (y.persistable) return refuse("result-persistable", "the all-reduce result " + quoted(&y) + " is persistable");
    const Op* first_reader = pirAssign() ? pirAssign() : split;
    if (const Op* other = firstOther(y.readers, first_reader))
      return refuse("result-multi-use", "the all-reduce result " + quoted(&y) + " is also read by " + opText(other, ar.block));
    if (const Op* assign = pirAssign(); assign && !checkPirAssign(*assign, *split)) return false;
    m_.split = const_cast<Op*>(split);
    m_.chunk_def = m_.split;
    Op& s = *m_.split;
    if (s.block != ar.block)
      return refuse("other-block", "the split is in block " + std::to_string(s.block->idx) + ", the all-reduce in block " + std::to_string(ar.block->idx));
    if (pos(&s) < pos(&ar))
      return refuse("split-first", "the split (" + opText(&s, ar.block) + ") runs before the all-reduce");
    if (env_.reshard_only) {
      auto ns = s.attrs.getString("op_namescope");
      if (!ns || ns->find("/auto_parallel/reshard") == std::string::npos)
        return refuse("not-reshard", "the split (" + opText(&s, ar.block) + ") was not inserted by resharding (reshard-only=true)");
    }
    if (m_.coll.dialect == Dialect::Pir) {
      if (!checkPirSplit(s, n, position)) return false;
    } else {
      if (!checkSplitShape(s, n)) return false;
      if (!checkSplitOutputs(s, position)) return false;
    }
    if (!checkKeptAccess()) return false;
    return checkStreams();
  }

  bool checkSplitShape(const Op& s, int64_t n) {
    for (const Slot& sl : s.inputs)
      if (sl.name != "X")
        return refuse("split-dynamic", "the split takes " + std::string(sl.name) + " as a tensor; only attribute axis/num/sections are understood");
    const Slot* xs = s.input("X");
    if (!xs || xs->args.size() != 1)
      return refuse("malformed", "the split (" + opText(&s, s.block) + ") needs exactly one X input");
    if (s.outputs.size() != 1 || s.outputs[0].name != "Out")
      return refuse("malformed", "the split (" + opText(&s, s.block) + ") needs exactly one output slot, Out");
    const auto* axis_raw = s.attrs.find("axis");
    auto axis = axis_raw ? rawToInt(*axis_raw) : std::optional<int64_t>(0);
    if (!axis) return refuse("split-axis", "split axis " + std::string(*axis_raw) + " is not an integer");
    int64_t rank = int64_t(m_.y->shape.size());
    int64_t norm = *axis < 0 ? *axis + rank : *axis;
    if (norm != 0) {
      std::string shown = std::to_string(*axis);
      if (*axis < 0) shown += " (" + std::to_string(norm) + " of a " + std::to_string(rank) + "-D tensor)";
      return refuse("split-axis", "split axis " + shown + " is not 0");
    }
    if (rank == 0) return refuse("split-axis", "the split input " + quoted(m_.y) + " is a scalar");
    int64_t num = s.attrs.getInt("num").value_or(0);
    if (num > 0) {
      if (num != n) return refuse("split-num", "split num " + std::to_string(num) + " != ring size " + std::to_string(n));
    } else {
      auto sections = s.attrs.getIntArray("sections").value_or(std::vector<int64_t>{});
      if (sections.empty()) return refuse("split-num", "the split has neither num nor sections");
      if (int64_t(sections.size()) != n)
        return refuse("split-num", "split into " + std::to_string(sections.size()) + " sections != ring size " + std::to_string(n));
      // Decided on the resolved sizes: [4, -1] of 8 rows is [4, 4] (analysis/split_sections.h).
      auto resolved = resolveSplitSections(sections, m_.y->shape[0]);
      bool equal = resolved && (*resolved)[0] > 0;
      for (int64_t v : resolved.value_or(std::vector<int64_t>{})) equal &= v == (*resolved)[0];
      if (!equal) {
        std::string shown = intArrayToRaw(sections);
        if (resolved && *resolved != sections) shown += " (resolved " + intArrayToRaw(*resolved) + ")";
        return refuse("split-unequal", "split sections " + shown + " are not equal");
      }
    }
    int64_t outs = int64_t(s.outputs[0].args.size());
    if (outs != n) return refuse("split-num", "the split has " + std::to_string(outs) + " outputs != ring size " + std::to_string(n));
    return true;
  }

  std::string useText(const Var* v, const Block* here) const {
    if (const Op* r = firstOther(v->readers, nullptr)) return "read by " + opText(r, here);
    return isFetched(v) ? "fetched" : "persistable";
  }

  bool checkSplitOutputs(const Op& s, int position) {
    const auto& args = s.outputs[0].args;
    std::unordered_set<const Var*> seen;
    std::vector<size_t> used;
    for (size_t i = 0; i < args.size(); ++i) {
      const Var* v = args[i].var;
      if (!seen.insert(v).second) return refuse("split-out-twice", "the split writes " + quoted(v) + " twice");
      if (!v->readers.empty() || isFetched(v) || v->persistable) used.push_back(i);
    }
    if (used.empty()) return refuse("split-unused", "no split output is used");
    if (used.size() > 1) {
      std::string list;
      for (size_t k = 0; k < used.size() && k < 4; ++k)
        list += (k ? ", " : "") + std::to_string(used[k]) + " " + quoted(args[used[k]].var) + " (" + useText(args[used[k]].var, s.block) + ")";
      if (used.size() > 4) list += ", ...";
      return refuse("split-multi-use", std::to_string(used.size()) + " split outputs are used, not one: " + list);
    }
    size_t k = used[0];
    if (int64_t(k) != position)
      return refuse("wrong-chunk", "split keeps output " + std::to_string(k) + " but rank " + std::to_string(m_.allreduce->block->program->rank) +
                                          " is at position " + std::to_string(position) + " of " + groupText(*m_.group));
    m_.kept = args[k].var;
    if (m_.kept == m_.x)
      return refuse("in-place", "the kept chunk " + quoted(m_.kept) + " is the all-reduce input itself");
    if (m_.kept->dtype != m_.x->dtype)
      return refuse("dtype", "the kept chunk " + quoted(m_.kept) + " is " + std::string(dtypeName(m_.kept->dtype)) +
                                    " but the all-reduce input " + quoted(m_.x) + " is " + std::string(dtypeName(m_.x->dtype)));
    // The dead outputs are removed: nothing else may write them either. (Other writes of the kept
    // chunk are checked by checkKeptAccess.)
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == k) continue;
      if (const Op* w = firstOther(args[i].var->writers, &s))
        return refuse("split-out-written", "split output " + std::to_string(i) + " " + quoted(args[i].var) + " is also written by " + opText(w, s.block));
      m_.dead.push_back(args[i].var);
    }
    return true;
  }

  // The reduce-scatter writes the kept chunk where the all-reduce was, earlier than the split
  // did: nothing between the two may read or write that var, and accesses from other blocks
  // cannot be placed relative to them, so they refuse too.
  bool checkKeptAccess() {
    const Op &ar = *m_.allreduce, &s = *m_.chunk_def;
    uint32_t lo = pos(&ar), hi = pos(&s);
    for (int dir = 0; dir < 2; ++dir) {
      for (const Op* o : dir == 0 ? m_.kept->readers : m_.kept->writers) {
        if (o == &s) continue;
        const char* verb = dir == 0 ? "read" : "written";
        if (o->block != ar.block)
          return refuse("kept-other-block", "the kept chunk " + quoted(m_.kept) + " is " + verb + " by " + opText(o, ar.block) +
                                                   ", which cannot be ordered against the all-reduce");
        if (pos(o) > lo && pos(o) < hi)
          return refuse("kept-between", "the kept chunk " + quoted(m_.kept) + " is " + verb + " by " + opText(o, ar.block) +
                                               ", between the all-reduce and the split");
      }
    }
    return true;
  }

  // Dropping an op that records or waits for cross-stream events would drop that dependency.
  // --- finding the split; PIR's longer chain ---

  // The split reading the all-reduce result (the last such reader, as messages have always named
  // it); in PIR a pd_op.split_with_num, read directly or through one pd_op.assign.
  const Op* findSplit() {
    const Op* found = nullptr;
    for (const Op* r : m_.y->readers) {
      if (m_.coll.dialect != Dialect::Pir) {
        if (isA(*r, opDef("split"))) found = r;
        continue;
      }
      if (isA(*r, opDef("split_with_num"))) return r;
      if (Var* a = isA(*r, opDef("assign")) ? r->out("out0") : nullptr)
        for (const Op* rr : a->readers)
          if (isA(*rr, opDef("split_with_num"))) {
            assign_ = r;
            return rr;
          }
    }
    return found;
  }
  const Op* pirAssign() const { return assign_; }

  // The assign between PIR's all-reduce and split: its result goes to the split and nowhere else.
  bool checkPirAssign(const Op& assign, const Op& split) {
    const Op& ar = *m_.allreduce;
    Var* a = assign.out("out0");
    if (assign.block != ar.block)
      return refuse("other-block", "the assign is in block " + std::to_string(assign.block->idx) + ", the all-reduce in block " +
                                       std::to_string(ar.block->idx));
    if (a->writers.size() != 1)
      return refuse("result-written", "the assigned result " + quoted(a) + " is also written by " + opText(firstOther(a->writers, &assign), ar.block));
    if (isFetched(a)) return refuse("result-fetched", "the assigned result " + quoted(a) + " is fetched");
    if (a->persistable) return refuse("result-persistable", "the assigned result " + quoted(a) + " is persistable");
    if (const Op* other = firstOther(a->readers, &split))
      return refuse("result-multi-use", "the assigned result " + quoted(a) + " is also read by " + opText(other, ar.block));
    m_.extra_ops.push_back(const_cast<Op*>(&assign));
    m_.extra_vars.push_back(a);
    return true;
  }

  // pd_op.split_with_num(data, axis) {num} -> a vector, read only by builtin.slice {index} ops, of
  // which exactly one is used: the rank's chunk.
  bool checkPirSplit(const Op& s, int64_t n, int position) {
    Var* axis_var = s.in("in1");
    if (!s.in("in0") || !axis_var || s.outputCount("out0") != 1)
      return refuse("malformed", "the split (" + opText(&s, s.block) + ") needs operands in0 (data) and in1 (axis) and one result");
    const Op* full = axis_var->writers.size() == 1 ? axis_var->writers[0] : nullptr;
    const auto* value = full && isA(*full, opDef("full")) ? full->attrs.find("value") : nullptr;
    auto axis_num = value ? rawToNumber(*value) : std::nullopt;
    if (!axis_num || *axis_num != double(int64_t(*axis_num)))
      return refuse("split-dynamic", "the split's axis " + quoted(axis_var) + " is not an integer constant of a pd_op.full");
    int64_t rank = int64_t(m_.y->shape.size()), axis = int64_t(*axis_num);
    if ((axis < 0 ? axis + rank : axis) != 0) return refuse("split-axis", "split axis " + std::to_string(axis) + " is not 0");
    int64_t num = s.attrs.getInt("num").value_or(0);
    if (num != n) return refuse("split-num", "split num " + std::to_string(num) + " != ring size " + std::to_string(n));
    Var* chunks = s.out("out0");
    std::vector<const Op*> used;
    for (const Op* r : chunks->readers) {
      if (!isA(*r, opDef("vector_slice")) || r->block != s.block)
        return refuse("split-vector-use", "the split's result " + quoted(chunks) + " is read by " + opText(r, s.block) + ", not by a builtin.slice");
      Var* out = r->out("out0");
      if (!out || !r->attrs.getInt("index")) return refuse("malformed", opText(r, s.block) + " needs an integer index and one result");
      if (!out->readers.empty() || isFetched(out) || out->persistable) used.push_back(r);
    }
    if (used.empty()) return refuse("split-unused", "no split output is used");
    if (used.size() > 1)
      return refuse("split-multi-use", std::to_string(used.size()) + " split outputs are used, not one: " + opText(used[0], s.block) +
                                           " and " + opText(used[1], s.block));
    int64_t k = *used[0]->attrs.getInt("index");
    if (k != position)
      return refuse("wrong-chunk", "split keeps output " + std::to_string(k) + " but rank " + std::to_string(m_.allreduce->block->program->rank) +
                                       " is at position " + std::to_string(position) + " of " + groupText(*m_.group));
    m_.chunk_def = const_cast<Op*>(used[0]);
    m_.kept = used[0]->out("out0");
    if (m_.kept->dtype != m_.x->dtype)
      return refuse("dtype", "the kept chunk " + quoted(m_.kept) + " is " + std::string(dtypeName(m_.kept->dtype)) +
                                 " but the all-reduce input " + quoted(m_.x) + " is " + std::string(dtypeName(m_.x->dtype)));
    for (const Op* r : chunks->readers) {
      m_.extra_ops.push_back(const_cast<Op*>(r));
      Var* out = r->out("out0");
      if (out == m_.kept) continue;
      if (const Op* w = firstOther(out->writers, r))
        return refuse("split-out-written", "split output " + quoted(out) + " is also written by " + opText(w, s.block));
      m_.dead.push_back(out);
    }
    m_.extra_vars.push_back(chunks);
    // The axis constant goes too when the split was its only reader.
    if (axis_var->readers.size() == 1 && !isFetched(axis_var) && !axis_var->persistable) {
      m_.extra_ops.push_back(const_cast<Op*>(full));
      m_.extra_vars.push_back(axis_var);
    }
    return true;
  }

  // An event recorded that no op waits for (PIR records one on every communication op) orders
  // nothing and goes with its op.
  bool checkStreams() {
    for (const Op* o : {static_cast<const Op*>(m_.allreduce), static_cast<const Op*>(m_.split)}) {
      if (!o->hasDistAttr()) continue;
      auto rec = o->dist_attr.getString("event_to_record");
      auto waits = o->dist_attr.find("events_to_wait");
      bool waits_some = waits && rawToStringArray(*waits).value_or(std::vector<std::string>{"?"}).size() > 0;
      if (waits_some) return refuse("stream-events", opText(o, o->block) + " waits for cross-stream events; fusing would drop the wait");
      if (rec && !rec->empty() && env_.awaited(*o->block->program, *rec))
        return refuse("stream-events", opText(o, o->block) + " records event \"" + *rec +
                                           "\", which other ops wait for; fusing would drop it");
    }
    return true;
  }

};

}  // namespace

AllReduceSplitResult matchAllReduceSplit(Op& allreduce, const Collective& coll, const AllReduceSplitEnv& env) {
  return Matcher(allreduce, coll, env).run();
}

}  // namespace spopt
