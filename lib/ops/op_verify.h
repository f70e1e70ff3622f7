#pragma once
// What the verifier checks of one op from its catalogue definition (ops/op_def.h): attributes
// that read as their declared kind, the slots its kernel requires, then its shape and dtype rule.
// The pointer in the result is the op's own (mapped to its dialect's slot and attribute names).
#include <optional>

#include "ops/op_def.h"
#include "ops/op_view.h"

namespace spopt {

std::optional<OpRuleError> checkOpDefinition(const OpView& op);

}  // namespace spopt
