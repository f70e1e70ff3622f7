// recompute-activations' memory model of one segment and its rewrite (recompute_segments.h).
#include <algorithm>
#include <unordered_map>

#include "analysis/memory.h"
#include "ir/op_role.h"
#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "passes/recompute_segments.h"
#include "passes/regather_match.h"

namespace spopt {

std::vector<int64_t> modelSlots(const MemoryProfile& prof, const BlockLiveness& entry) {
  std::vector<int64_t> slots(2 * prof.live_at.size());
  for (size_t i = 0; i < prof.live_at.size(); ++i) {
    int64_t born = 0;
    for (const Var* v : entry.born_at[i]) born += varBytes(*v);
    slots[2 * i] = prof.live_at[i] - born;
    slots[2 * i + 1] = prof.live_at[i];
  }
  return slots;
}

int64_t copyPeakBytes(const std::vector<Op*>& ops, const std::unordered_set<const Var*>& targets) {
  std::unordered_map<const Var*, size_t> last_read;
  for (size_t j = 0; j < ops.size(); ++j) {
    for (const Slot& sl : ops[j]->inputs)
      for (const Arg& a : sl.args)
        if (a.var && last_read.count(a.var) && readsBuffer(*ops[j], sl.name)) last_read[a.var] = j;
    for (const Slot& sl : ops[j]->outputs)
      for (const Arg& a : sl.args)
        if (a.var) last_read.emplace(a.var, j);
  }
  std::vector<int64_t> freed_after(ops.size(), 0);
  int64_t live = 0, peak = 0;
  for (size_t j = 0; j < ops.size(); ++j) {
    for (const Slot& sl : ops[j]->outputs)
      for (const Arg& a : sl.args)
        if (a.var) {
          live += varBytes(*a.var);
          if (!targets.count(a.var)) freed_after[last_read.at(a.var)] += varBytes(*a.var);
        }
    peak = std::max(peak, live);
    live -= freed_after[j];
  }
  return peak;
}

void applySegmentModel(LiveBytesTree& tree, const RankSegments& r, const Segment& s, int sign) {
  const std::vector<int32_t>& dies = r.live.entry().dies_after;
  const int64_t gap = 2 * s.insert_at;  // where the copies run
  for (size_t ti : s.targets) tree.add(2 * (r.saved[ti].last_fwd_at + 1), gap, -sign * varBytes(*r.saved[ti].var));
  for (const Var* a : s.anchors)
    if (a->id < dies.size() && dies[a->id] >= 0 && dies[a->id] < s.insert_at) tree.add(2 * (dies[a->id] + 1), gap, sign * varBytes(*a));
  tree.add(gap, gap, sign * s.copy_peak);
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
