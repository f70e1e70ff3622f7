#pragma once
// Input slots whose *buffer* an op does not read: the kernel uses only the tensor's shape and
// dtype (Paddle's no-need-buffer inference). After its last real (buffer) read, a var read only
// through such slots can be released: liveness (analysis/liveness.h) ends its buffer there, and
// replay hands the kernel a shape-only tensor for the slot.
//
// The table (op names as in ../shared/design/ops.md), checked against lib/runtime/kernels:
//   elementwise_add_grad  X, Y    dX = dOut and dY = dOut summed over broadcast dims: the
//                                 kernel reads X's and Y's shapes only (elementwise.cpp, Kind::Add
//                                 never dereferences the other operand)
//   elementwise_sub_grad  X, Y    same (no kernel here yet; Paddle declares the same)
//   reshape2_grad         XShape  dims come from XShape's shape [0, ...X dims] (shape.cpp)
//   transpose2_grad       XShape  same
//   reduce_sum_grad       X       only X's shape checks dX (reduce.cpp, reduceBackward)
//   reduce_mean_grad      X       same
//   mean_grad             X       same
//   layer_norm_grad       Bias    the gradient does not depend on Bias; the kernel never reads it
//                                 (norm.cpp, layerNormGrad)
// Every other slot of every op reads its buffer (matmul_v2_grad X/Y, gelu_grad X, relu_grad and
// softmax_grad Out, dropout_grad Mask, layer_norm_grad X/Scale/Mean/Variance, every *@GRAD input).
#include <string_view>

#include "ir/ir.h"

namespace spopt {

// False when `op`'s kernel uses only the shape and dtype of input `slot` (table above).
bool readsBuffer(std::string_view op_type, std::string_view slot);
inline bool readsBuffer(const Op& op, std::string_view slot) { return readsBuffer(op.type, slot); }

}  // namespace spopt
