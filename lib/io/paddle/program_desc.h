#pragma once
// Paddle's ProgramDesc protobuf (*.pdmodel, __model__, program.desc.serialize_to_string()) <->
// format-v1 program objects. The wire definition is the project's own (framework.proto here),
// written from the published field names and numbers; see docs/paddle.md for the mapping.
#include <string>
#include <string_view>

#include "io/paddle/formats.h"

namespace spopt::paddle {

bool looksLikeProgramDesc(std::string_view bytes);
ImportedProgram readProgramDesc(const std::string& path, std::string_view bytes);
std::string writeProgramDesc(const Json& program, const std::string& where);

}  // namespace spopt::paddle
