#pragma once
// Splitting matmul_v2_grad into its two GEMMs, so that a collective reading the input gradient can
// run while the weight gradient is computed (Paddle's split_matmul_grad_to_matmul, used by
// allreduce_matmul_grad_overlapping). For Out = X op(Y) with G = Out@GRAD, trans_x = false and a
// 2-D Y:
//   dX = matmul_v2(G, Y, trans_y = !trans_y)                       (G's batch folds into M)
//   dY = matmul_v2(Xf, Gf, trans_x = true)   when trans_y = false  (Xf, Gf: X and G flattened to
//   dY = matmul_v2(Gf, Xf, trans_x = true)   when trans_y = true    2-D by reshape2 when 3-D+)
// These are the GEMMs replay's matmul_v2_grad kernel runs (one GEMM each, same operands, same
// transposes, same leading dimensions), so the split is bitwise identical on the host replay.
// dX comes first, at the grad op's place: the op producing the value a collective waits for.
#include <optional>
#include <string>
#include <string_view>

#include "ir/ir.h"
#include "passes/pass.h"

namespace spopt {

struct MatmulGradSplit {
  Op* dx = nullptr;  // the dX matmul_v2 (null when the grad op has no X@GRAD)
  Op* dw = nullptr;  // the dW matmul_v2 (null when it has no Y@GRAD)
};

// Why `op` cannot be split ("" when it can): not matmul_v2_grad, trans_x, Y not 2-D, unknown shapes,
// a missing output.
std::string_view matmulGradSplitRefusal(const Op& op);  // a literal: no allocation, most ops are asked
// Splits `op` (matmulGradSplitRefusal(op) must be ""); the new ops keep its attrs (op_role,
// op_namescope, ...) and dist_attr. `op` is erased.
MatmulGradSplit splitMatmulGrad(Job& job, Op& op);

}  // namespace spopt
