#pragma once
// The attributes replay's kernels read, with the kind each must read as (runtime/kernels/
// kernel_util.h intAttr / floatAttr / boolAttr / stringAttr / intsAttr, same leniency: an integer
// may be an integral number or a bool, a bool may be 0 or 1, a list of integers may be one integer).
// The verifier checks them, so a job replay would stop on for an attribute's type fails `validate`.
#include <optional>
#include <string_view>

#include "analysis/op_shape_rules.h"
#include "ir/ir.h"

namespace spopt {

enum class AttrKind { Int, Float, Bool, String, Ints };

// Whether `raw` (an attribute's JSON text) reads as `kind` the way the kernels read it.
bool attrReadsAs(std::string_view raw, AttrKind kind);

// The first attribute of `op` a kernel reads and could not: `where` "/attrs/NAME", the kernel's
// own message ("attribute NAME is not an integer: RAW"). Ops without a kernel: nullopt.
std::optional<OpRuleError> checkAttrKinds(const Op& op);

}  // namespace spopt
