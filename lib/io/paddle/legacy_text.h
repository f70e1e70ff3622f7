#pragma once
// Paddle's legacy program text, as print(program) writes it ("{ // block 0", "var x : LOD_TENSOR
// .shape(...)...", "{Out=[...]} = op(inputs={X=[...]}, attr = value, ...)"). Read only: Paddle
// cannot parse it back, and it drops what the binary has (attr types are guessed from spelling).
#include <string>
#include <string_view>

#include "io/paddle/formats.h"

namespace spopt::paddle {

bool looksLikeLegacyText(std::string_view bytes);
// Parse errors are InputError "FILE: LINE:COL: message".
ImportedProgram readLegacyText(const std::string& path, std::string_view bytes);

}  // namespace spopt::paddle
