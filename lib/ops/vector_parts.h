#pragma once
// The parts of a PIR vector value (a Tensor[] argument or result: builtin.combine's result,
// check_finite_and_unscale_'s out). A vector var is declared [k]; replay holds its parts one after
// another in one buffer. When the program says each part's shape — the operands of the
// builtin.combine that makes it, or, for a result whose definition says `parts_of` (ops/op_def.h),
// the parts of the vector the op reads there — the parts may differ (the gradients of every
// parameter); otherwise (split_with_num, stack_grad) they are k equal parts, held stacked [k, ...].
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace spopt {

// Whether `v` is a vector value of a PIR program: written by a VectorResult op (builtin.combine,
// split_with_num) or in a result slot its definition says is a vector.
bool isVectorValue(const Var& v);

// Each part's shape, or nullopt when the program does not say them (equal parts, stacked).
std::optional<std::vector<std::vector<int64_t>>> vectorPartShapes(const Var& vec);

}  // namespace spopt
