#pragma once
// Name resolution: what turns a job as read (args naming vars) into the IR passes work on (args
// pointing at vars, def-use lists filled). The loader calls it once every program is in.
#include "ir/ir.h"

namespace spopt {

// Links blocks to their parents and points every op argument at the var it names (declared in the
// op's block or an ancestor), building def-use. Throws InputError (the job's path and the pointer
// of the parent_idx or argument) on a missing parent, a parent cycle or an undeclared var.
void resolveNames(Job& job);

}  // namespace spopt
