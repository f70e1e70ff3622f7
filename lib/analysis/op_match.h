#pragma once
// Pairs the ops of one rank's program in two jobs (before and after a rewrite) by data flow, so
// that a diff can say which ops a rewrite removed, added or changed.
//
// Ops carry no stable identity across files, but the names of the vars they write mostly do:
// passes keep the names of the values they do not touch. Matching therefore runs in rounds, each
// pairing only ops still unpaired, with a hash map from a key to the ops having it in program
// order (the k-th unpaired op with a key in BEFORE pairs with the k-th in AFTER, which keeps
// in-place ops such as `sgd ParamOut=Param` in their order):
//   1. block, type and the names of all outputs (slot order);
//   2. block, type and the names of all inputs (slot order): an op whose outputs were renamed;
//   3. block, type and attributes, for ops that name no vars at all.
// An op that is renamed and rewired at once is reported removed and added. Linear in program size.
#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace spopt {

// One op in a program's execution order (blocks in order, ops in order).
struct OpSlot {
  const Op* op = nullptr;
  uint32_t index = 0;     // position in that order across all blocks
  uint32_t position = 0;  // position in its block's op list (the JSON array index)
};

// A program's ops in order, and each op's place by Op::id.
struct OpOrder {
  std::vector<OpSlot> ops;
  std::vector<uint32_t> index_of_id;  // Op::id -> index in `ops`
  OpOrder() = default;  // a program that is not there
  explicit OpOrder(const Program& p);
  const OpSlot& of(const Op* op) const { return ops[index_of_id[op->id]]; }
};

struct OpMatching {
  // Indexed by OpOrder index: the paired index in the other program, or kNone.
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> after_of_before, before_of_after;
};

OpMatching matchOps(const OpOrder& before, const OpOrder& after);

}  // namespace spopt
