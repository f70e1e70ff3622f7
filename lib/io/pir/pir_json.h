#pragma once
// PIR JSON (Paddle 3's `.json` program files, compressed keys) <-> format v1.
// The mapping is lossless: readPirJson then writePirJson gives the same JSON value (docs/pir.md).
#include <string>

#include "io/pir/pir_common.h"

namespace spopt::pir {

// One format-v1 program object ("fetch", "blocks", preserved "pir"; no "rank": the job assembler
// adds it). Throws InputError "FILE: /json/pointer: what" on anything it cannot map losslessly.
ojson readPirJson(const std::string& path);
ojson pirJsonToProgram(std::string_view text, const std::string& display_name);

// A format-v1 program object (as a job holds it) back to PIR JSON: compact, keys sorted as Paddle
// writes them. Throws InputError naming `where` when the program has no PIR form (nested blocks).
std::string writePirJson(const ojson& program, const std::string& where);

}  // namespace spopt::pir
