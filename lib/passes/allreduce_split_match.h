#pragma once
// The pattern of fuse-allreduce-split, apart from the rewrite: a SUM all-reduce whose result is
// only split into the ring's n equal chunks along axis 0, of which the rank keeps only its own.
//
// matchAllReduceSplit looks at one all-reduce on one rank and returns either the match (what the
// rewrite needs) or a refusal {code, reason}. It checks this rank only; whether every member rank
// of the ring agrees is the pass's business (analysis/ring_order). Linear: O(uses) per candidate.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/collectives.h"
#include "ir/ir.h"

namespace spopt {

struct Refusal {
  std::string code;    // short stable key (the explain code)
  std::string reason;  // plain words
};

struct AllReduceSplitMatch {
  Op* allreduce = nullptr;
  Collective coll{};
  Op* split = nullptr;
  Var* x = nullptr;     // the all-reduce input: the reduce-scatter's input
  Var* y = nullptr;     // the all-reduce result: removed
  Var* kept = nullptr;  // the rank's chunk: the reduce-scatter's output
  std::vector<Var*> dead;  // the other chunks: removed
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
  bool reshard_only = false;  // only splits whose op_namescope contains /auto_parallel/reshard
};

AllReduceSplitResult matchAllReduceSplit(Op& allreduce, const Collective& coll, const AllReduceSplitEnv& env);

// "ring 0 [0,1,2,3]"
std::string groupText(const ProcessGroup& g);

}  // namespace spopt
