#pragma once
// Cutting a tensor into equal row blocks along axis 0 and joining row blocks back, in the
// program's dialect: legacy split / concat; PIR pd_op.split_with_num + builtin.slice, and
// builtin.combine + pd_op.concat (PIR holds several values of one operand as a vector). Both are
// copies on replay (bitwise: rows are moved, never computed). For passes that decompose an op by
// rows (decompose-collective-matmul).
#include <vector>

#include "ir/ir.h"
#include "ops/op_builder.h"

namespace spopt {

// `x` cut into `parts` equal row blocks (fresh vars), the ops inserted before `before`, taking
// op_role and op_namescope from `like`.
std::vector<Var*> splitRows(OpBuilder& b, Var* x, int64_t parts, Op& before, const Op& like);
// `blocks` joined along axis 0 into `out` (declared by the caller), inserted before `before`.
void concatRows(OpBuilder& b, const std::vector<Var*>& blocks, Var* out, Op& before, const Op& like);

}  // namespace spopt
