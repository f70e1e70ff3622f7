// recompute-activations' memory model of one segment and its rewrite (recompute_segments.h).
#include <unordered_map>

#include "analysis/memory.h"
#include "ir/op_role.h"
#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "passes/recompute_segments.h"
#include "passes/regather_match.h"

namespace spopt {

void applySegmentModel(LiveBytesTree& tree, const RankSegments& r, const Segment& s, int sign) {
  const std::vector<int32_t>& dies = r.live.entry().dies_after;
  for (size_t ti : s.targets) tree.add(r.saved[ti].last_fwd_at + 1, s.insert_at - 1, -sign * varBytes(*r.saved[ti].var));
  for (const Var* a : s.anchors)
    if (a->id < dies.size() && dies[a->id] >= 0 && dies[a->id] < s.insert_at) tree.add(dies[a->id] + 1, s.insert_at, sign * varBytes(*a));
  tree.add(s.insert_at, s.insert_at, sign * s.temp_bytes);
}

void rewriteSegment(RankSegments& r, const Segment& s) {
  OpBuilder b(*s.insert_before->block);
  std::unordered_map<const Var*, Var*> copy;
  for (Op* op : s.ops) {
    NewOp n = b.clone(*op);
    for (Slot& sl : n.op().inputs)
      for (Arg& a : sl.args)
        if (auto it = copy.find(a.var); it != copy.end()) a = {it->second->name, it->second};
    for (Slot& sl : n.op().outputs)
      for (Arg& a : sl.args) {
        Var* fresh = b.freshVar(std::string(a.var->name) + "@recompute", a.var->shape, a.var->dtype, a.var);
        copy[a.var] = fresh;
        a = {fresh->name, fresh};
      }
    n.phase(Phase::Backward);
    n.insertBefore(*s.insert_before);
  }
  for (size_t ti : s.targets) {
    Var* t = r.saved[ti].var;
    Var* c = copy.at(t);
    std::vector<Op*> readers(t->readers.begin(), t->readers.end());
    for (Op* rd : readers) {
      if (!isBackwardOp(*rd)) continue;
      for (Slot& sl : rd->inputs)
        for (size_t i = 0; i < sl.args.size(); ++i)
          if (sl.args[i].var == t && readsBuffer(*rd, sl.name)) setInputArg(*rd, sl.name, i, c);
    }
  }
}

}  // namespace spopt
