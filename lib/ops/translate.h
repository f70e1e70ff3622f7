#pragma once
// Translation between dialects, as Paddle's legacy -> PIR translator does it, with the catalogue as
// its table (Paddle keeps the same facts in op_compat.yaml): each op becomes its PIR spelling with
// operands in0.. / results out0.. in the definition's order, attributes renamed (trans_x ->
// transpose_x), Scalar and IntArray attributes turned into pd_op.full / pd_op.full_int_array
// operands, a split into pd_op.split_with_num + one builtin.slice per part, a slot of several
// vars (concat's X, add_n's X) into a builtin.combine vector, and several vars a vector-result op
// writes (stack_grad's X@GRAD) into its vector and one builtin.slice per part. Var names, dist attrs, op_role and
// the other attributes PIR does not define are kept. A legacy slot PIR has no place for (transpose2's
// XShape) and a result PIR adds (an unused X@GRAD) are recorded in the attribute legacy_slots
// ("XShape=t_0.tmp_1", "Y@GRAD="), so that legacy -> PIR -> legacy gives back the same job.
#include "ir/ir.h"

namespace spopt {

// Rewrites every program of `job` that is not PIR into PIR. Throws InputError naming the op when
// an op has no PIR spelling in the catalogue or a shape the translation does not cover.
void translateToPir(Job& job);

// Rewrites every PIR program of `job` into legacy ops: each op its legacy spelling and slot names,
// constant operands back into attributes, split_with_num + builtin.slice into split (and another
// vector result's slices into its slot of several vars), a builtin.combine into the slot of
// several vars it feeds, builtin.parameter / pd_op.data into
// plain program inputs. Throws InputError naming the op when it has no legacy spelling.
void translateToLegacy(Job& job);

inline constexpr const char* kLegacySlotsAttr = "legacy_slots";

}  // namespace spopt
