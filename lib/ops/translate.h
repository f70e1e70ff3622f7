#pragma once
// Translation between dialects, as Paddle's legacy -> PIR translator does it, with the catalogue as
// its table (Paddle keeps the same facts in op_compat.yaml): each op becomes its PIR spelling with
// operands in0.. / results out0.. in the definition's order, attributes renamed (trans_x ->
// transpose_x), Scalar and IntArray attributes turned into pd_op.full / pd_op.full_int_array
// operands, a split into pd_op.split_with_num + one builtin.slice per part, and a slot of several
// vars (concat's X, add_n's X) into a builtin.combine vector. Var names, dist attrs, op_role and
// the other attributes PIR does not define are kept.
#include "ir/ir.h"

namespace spopt {

// Rewrites every program of `job` that is not PIR into PIR. Throws InputError naming the op when
// an op has no PIR spelling in the catalogue or a shape the translation does not cover.
void translateToPir(Job& job);

}  // namespace spopt
