#pragma once
// Where an op stands, as the replay executors (host and device) name it in their messages, and a
// walk over the vars of an op's slots: shared so that both say the same thing the same way.
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/json_pointer.h"

namespace spopt::rt {

// "/programs/P/blocks/B/ops/K" for op `index` of block `b`.
inline std::string opAt(const Program& p, const Block& b, size_t index) { return opPointer(p.position, b.position, index); }

// "op 'matmul_v2' (rank 1, block 0, op 7)".
inline std::string where(const Program& p, const Block& b, size_t index, std::string_view type) {
  return "op '" + std::string(type) + "' (rank " + std::to_string(p.rank) + ", block " + std::to_string(b.idx) + ", op " +
         std::to_string(index) + ")";
}

// Calls f(var) for every resolved arg of `slots`.
template <typename F>
void forEachArg(const std::vector<Slot>& slots, F f) {
  for (const auto& s : slots)
    for (const auto& a : s.args)
      if (a.var) f(*a.var);
}

}  // namespace spopt::rt
