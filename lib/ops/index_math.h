#pragma once
// The shape arithmetic of the indexing ops (squeeze, slice, expand, stack, gather_nd), shared by
// their rules (ops/index_ops.cpp) and replay's kernels (runtime/kernels/index.cpp), so each rule
// lives once. Each returns nullopt with `why` set when the op cannot apply.
#include <optional>
#include <string>

#include "ops/shape_math.h"

namespace spopt {

// squeeze2: X without the size-1 dims named by `axes` (negative counts from the end; a named dim
// that is not 1 stays, as in Paddle); empty axes drop every size-1 dim.
std::optional<ShapeDims> resolveSqueeze(const ShapeDims& x, const ShapeDims& axes, std::string* why);

// squeeze_grad's X@GRAD has X's dims. Legacy programs give them as XShape ([0, ...X dims]);
// Paddle 3's squeeze_grad(x, out_grad, axis) as x itself (its operand 0), where earlier PIR
// programs pass the xshape value. The dims X@GRAD must have, from what operand 0 / XShape holds
// (`v`, of `v_is_xshape` slot) and X@GRAD's own dims: a [0, ...X@GRAD dims] value in the X slot is
// taken as an xshape. nullopt with `why` set when an XShape is empty.
std::optional<ShapeDims> squeezeGradXDims(const ShapeDims& v, bool v_is_xshape, const ShapeDims& dx, std::string* why);

// slice with step 1: for each of `axes`, [starts[i], ends[i]) clamped to the dim (negative bounds
// count from its end). `begin` is each dim's first index, `sliced` each dim's length, `out` the
// result's dims once `decrease_axis` (sliced to 1) are dropped.
struct SliceBox {
  ShapeDims begin, sliced, out;
};
std::optional<SliceBox> resolveSlice(const ShapeDims& x, const ShapeDims& axes, const ShapeDims& starts, const ShapeDims& ends,
                                     const ShapeDims& decrease_axis, std::string* why);

// expand_v2: X right-aligned against `shape`; -1 keeps X's dim, a dim of X that is 1 repeats.
std::optional<ShapeDims> resolveExpand(const ShapeDims& x, const ShapeDims& shape, std::string* why);

// stack: n parts of dims `part` joined along a new dim `axis` (in [-(r+1), r]); `axis` comes back
// normalised.
std::optional<ShapeDims> resolveStack(const ShapeDims& part, int64_t n, int64_t* axis, std::string* why);

// gather_nd: Index's last dim k picks X's first k dims; Out is Index's leading dims then X's rest.
std::optional<ShapeDims> resolveGatherNd(const ShapeDims& x, const ShapeDims& index, std::string* why);

}  // namespace spopt
