#pragma once
// The policies of recompute-activations: which forward ops a segment may contain
// (core attention, the user's op patterns, or any: `all`, the full recompute), and, under a memory
// budget, which segments to recompute (recompute_segments.h has the candidates and their memory
// model).
//
// core-attention (Megatron-LM's selective recompute, `recompute_modules=core_attn`): around each
// forward softmax, the GEMM that makes its scores (both operands activations: QK^T), the pointwise
// ops between them (scale, an additive mask), the softmax, the pointwise and random ops after it
// (its dropout), and the GEMM that reads them (attention over V). Found by data flow and catalogue
// traits (Blas, Elementwise, Random), never by op names.
//
// list (Paddle's refined_ops_patterns): `ops=softmax>dropout;gelu` — patterns separated by ';',
// each a chain of op names (canonical or any dialect's spelling) linked by '>' where each op reads
// an output of the one before; every forward op on a full match may be recomputed.
//
// budget: the fewest extra FLOPs (the cost model's) that bring the rank's modelled peak to at most
// the budget. Greedy: most bytes per FLOP first, each kept only when it lowers the peak, then the
// ones no longer needed dropped, latest first: O(n log n + n log ops). Exact: every subset (Gray
// code order, one segment toggled per step: O(2^n log ops)), for n up to exact-limit. A budget no
// choice meets gets the lowest peak the search finds.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ops/op_def.h"
#include "passes/recompute_segments.h"

namespace spopt {

using OpPattern = std::vector<const OpDef*>;  // a chain, in data-flow order

// Parses ops=...; an unknown op name or an empty pattern is bad input (InputError, one line).
std::vector<OpPattern> parseOpPatterns(std::string_view text);
// [Op::id] -> 1 for every forward op of `p` on a full match of a pattern.
std::vector<char> markPatternOps(const Program& p, const std::vector<OpPattern>& patterns);
// [Op::id] -> 1 for every forward op of a core attention.
std::vector<char> markCoreAttention(const Program& p);

struct BudgetChoice {
  std::vector<char> chosen;  // [segment]
  double flops = 0;
  int64_t peak = 0;          // the model's peak with the choice applied
  bool met = false;
};
BudgetChoice chooseGreedy(const RankSegments& r, int64_t budget);
BudgetChoice chooseExact(const RankSegments& r, int64_t budget);

}  // namespace spopt
