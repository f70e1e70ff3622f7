#pragma once
// The PIR formats' rows of the import/export table (lib/io/paddle/formats.h).
#include <string>
#include <string_view>

#include "io/paddle/formats.h"

namespace spopt::pir {

bool looksLikePirJson(std::string_view bytes);  // a JSON object whose "base_code" comes first
paddle::ImportedProgram readPirJsonFormat(const std::string& path, std::string_view bytes);
std::string writePirJsonFormat(const paddle::Json& program, const std::string& where);

bool looksLikePirText(std::string_view bytes);  // "{" then an op line: "(%N) = ..." or "\"dialect.op\""
paddle::ImportedProgram readPirTextFormat(const std::string& path, std::string_view bytes);
std::string writePirTextFormat(const paddle::Json& program, const std::string& where);

}  // namespace spopt::pir
