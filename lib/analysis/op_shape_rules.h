#pragma once
// Static op rules that replay's kernels (runtime/kernels) also enforce: required slots, attribute
// ranges, and the shapes an op's declared vars must have. The verifier runs them on every op whose
// vars have known shapes, so `validate` rejects what replay would; the kernels call the pure shape
// helpers below so that each rule lives once.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

using ShapeDims = std::vector<int64_t>;

// One broken rule: `where` is a JSON pointer suffix below the op ("" for the op itself,
// "/attrs/axis", "/outputs/Out/0"), `message` a sentence that starts with the op type.
struct OpRuleError {
  std::string where;
  std::string message;
};

// The first broken rule of `op`, or nullopt. Rules whose vars have unknown (-1) dims, or whose
// attributes are absent from the op's type list, are skipped.
std::optional<OpRuleError> checkOpRules(const Op& op);

// Paddle's elementwise broadcast with `axis`: the shorter operand lines up at `axis` (-1: at the
// end; its trailing 1s are dropped when they would not fit). x and y come back padded to the
// output's rank. nullopt, with `why` set, when they do not broadcast.
struct AlignedBroadcast {
  ShapeDims x, y, out;
};
std::optional<AlignedBroadcast> alignBroadcast(const ShapeDims& x, const ShapeDims& y, int64_t axis, std::string* why);

// reshape2's target: 0 copies X's dim at that index, one -1 is inferred. nullopt with `why` set
// when the target is malformed or does not hold X's elements.
std::optional<ShapeDims> resolveReshape(const ShapeDims& x, ShapeDims target, std::string* why);

// transpose2's `axis`, with negative entries normalised; nullopt when it is no permutation of rank.
std::optional<ShapeDims> resolvePermutation(ShapeDims perm, size_t rank);

// matmul_v2's batch dims (all but the last two), right-aligned, each pair equal or one of them 1.
std::optional<ShapeDims> broadcastBatchDims(const ShapeDims& a, const ShapeDims& b);

// How replay stores a dtype (runtime/tensor.h Storage is this): float16 and bfloat16 compute in
// float32, int32 in int64, bool in uint8. Kernels require equal storage, not equal dtypes.
enum class DTypeStorage : uint8_t { F32, F64, I64, U8 };
DTypeStorage dtypeStorage(DType t);

// Paddle's proto VarType codes for the dtypes a job may declare (fill_constant's dtype attribute).
std::optional<DType> dtypeFromPaddleCode(int64_t code);

std::string dimsText(const ShapeDims& d);  // "[4,3]"

}  // namespace spopt
