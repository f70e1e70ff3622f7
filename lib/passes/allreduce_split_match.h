#pragma once
// The pattern of fuse-allreduce-split, apart from the rewrite: a SUM all-reduce whose result is
// only split into the ring's n equal chunks along axis 0, of which the rank keeps only its own.
// Three dialects: legacy c_allreduce_sum X/Out -> split; current all_reduce x/out -> split; PIR
// pd_op.all_reduce_ / c_allreduce_sum_ in0/out0 -> [pd_op.assign] -> pd_op.split_with_num (axis
// from a pd_op.full) -> builtin.slice {index} (the pattern of Paddle's
// fuse_allreduce_split_to_reducescatter_pass, which does not check the index against the rank).
//
// matchAllReduceSplit looks at one all-reduce on one rank and returns either the match (what the
// rewrite needs) or a refusal {code, reason}. It checks this rank only; whether every member rank
// of the ring agrees is the driver's business (collective_rewrite_driver.h). Linear: O(uses) per
// candidate.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/collectives.h"
#include "analysis/ring_order.h"
#include "ir/ir.h"
#include "passes/refusal.h"

namespace spopt {

struct AllReduceSplitMatch {
  Op* allreduce = nullptr;
  Collective coll{};
  Op* split = nullptr;
  Op* chunk_def = nullptr;  // the op defining the kept chunk: the split, or PIR's builtin.slice
  Var* x = nullptr;     // the all-reduce input: the reduce-scatter's input
  Var* y = nullptr;     // the all-reduce result: removed
  Var* kept = nullptr;  // the rank's chunk: the reduce-scatter's output
  std::vector<Var*> dead;  // the other chunks: removed
  // PIR only: the assign, the slices and (when nothing else reads it) the axis pd_op.full, and
  // the vars only they define; removed with the split.
  std::vector<Op*> extra_ops;
  std::vector<Var*> extra_vars;
  const ProcessGroup* group = nullptr;
};

struct AllReduceSplitResult {
  // The all-reduce's result is read by a split: a candidate of the pass (counted in its stats).
  bool candidate = false;
  std::optional<AllReduceSplitMatch> match;
  Refusal refusal;  // when !match
};

struct AllReduceSplitEnv {
  const Job* job = nullptr;
  // The op's index in its block (positions of the pass's input: what messages report).
  std::function<uint32_t(const Op*)> position;
  std::function<bool(const Var*)> fetched;
  // Whether some op of the program waits for this event (events_to_wait): an event the all-reduce
  // or the split records that nobody waits for can be dropped with them.
  std::function<bool(const Program&, std::string_view event)> awaited;
  bool reshard_only = false;  // only splits whose op_namescope contains /auto_parallel/reshard
};

AllReduceSplitResult matchAllReduceSplit(Op& allreduce, const Collective& coll, const AllReduceSplitEnv& env);

// "ring 0 [0,1,2,3]": the matcher's name for analysis/ring_order.h's ringText.
inline std::string groupText(const ProcessGroup& g) { return ringText(g); }

}  // namespace spopt
