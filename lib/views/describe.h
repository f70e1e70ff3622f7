#pragma once
// Short human descriptions of ops, vars and sizes, shared by the text, dot and html views.
#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace spopt {

// "80 B", "1.5 KiB", "12.0 MiB".
std::string humanBytes(int64_t bytes);
// "X=y -> Out=y_0,y_1" (empty slots are left out).
std::string describeSlots(const Op& op);
// "ring 0, 80 B" for a communicating collective ("ring 0, ? B" when its size is unknown); "" otherwise.
std::string describeCollective(const Op& op, bool bus_factors);
// "[4, 5] float32".
std::string describeVarType(const Var& v);
// "op 3" or, outside block 0, "op 1.3" (block idx, position in the block).
std::string describeOpPlace(const Op& op, uint32_t position);

}  // namespace spopt
