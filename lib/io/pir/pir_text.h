#pragma once
// PIR text (what Paddle 3 prints for a program, and what its PIR parser reads) -> format v1.
// The op mapping is the one of PIR JSON (pir_common.h, docs/pir.md); attribute types use the
// shared vocabulary (Int32 -> int32, Float -> float32, (pd_op.Place)Place(gpu:0) -> place "gpu:0").
#include <string>
#include <string_view>

#include "io/pir/pir_common.h"

namespace spopt::pir {

// One format-v1 program object (as readPirJson). Throws InputError "FILE: line:col: what".
ojson readPirText(const std::string& path);
ojson pirTextToProgram(std::string_view text, const std::string& display_name);

// A format-v1 program object back to PIR text, one op a line as Paddle prints it (what the reader
// kept comes back: attr order and types, type spellings). Throws InputError naming `where`.
std::string writePirText(const ojson& program, const std::string& where);

// Single items, as the PIR parser's own test cases hold them.
ojson parsePirTextAttribute(std::string_view text, const std::string& display_name, ojson* type = nullptr);
std::string parsePirTextType(std::string_view text, const std::string& display_name);  // normalised spelling

}  // namespace spopt::pir
