#pragma once
// Vars a Paddle program names but does not declare: they live only in the executor's scope (the
// reader queue a py_reader feeds, "lod_tensor_blocking_queue_0", is made by Python, never by the
// program). The importer declares each in block 0 as a non-tensor RAW var marked scope_only, so
// that the verifier knows what it is; export leaves it out again, as Paddle wrote the program.
#include <string>
#include <vector>

#include "io/paddle/formats.h"

namespace spopt::paddle {

// Declares the undeclared vars of `program` (format v1 blocks) and returns their names.
std::vector<std::string> declareScopeVars(Json& program);

// declareScopeVars on an imported program, with a note naming what it declared.
void noteScopeVars(ImportedProgram& imported);

// Whether a var is one declareScopeVars made.
bool isScopeOnly(const Json& var);

}  // namespace spopt::paddle
