#pragma once
// The shape arithmetic the ops' rules (ops/*_ops.cpp, run by the verifier) and replay's kernels
// share, so that each rule lives once: broadcast, reshape and permutation resolution, batch dims,
// and how replay stores each dtype.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

using ShapeDims = std::vector<int64_t>;

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

// unsqueeze2's result: a 1 inserted at each of `axes` in turn, a negative axis counting from the
// end of the shape built so far. nullopt with `why` set when an axis is out of range.
std::optional<ShapeDims> resolveUnsqueeze(const ShapeDims& x, const ShapeDims& axes, std::string* why);

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
std::optional<int64_t> paddleDtypeCode(DType t);  // the inverse; nullopt for a dtype Paddle has no code for here
// A dtype attribute's raw JSON value: a Paddle code, or a name ("bfloat16", "paddle.float16").
std::optional<DType> dtypeFromAttr(std::string_view raw);

std::string dimsText(const ShapeDims& d);  // "[4,3]"
std::string typeText(const Var& v);        // "float32[4,3]"

}  // namespace spopt
