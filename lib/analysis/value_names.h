#pragma once
// Comparing jobs up to the names of their temporaries. A PIR file keeps the names of a program's
// parameters and inputs but numbers every other value, so a job sent through one comes back with
// "v57" where it had "linear_0.tmp_0": the same job, as MLIR modules that differ only in SSA names
// are the same module.
#include "ir/ir.h"

namespace spopt {

// Renames every temporary -- a var an op writes that is neither persistable nor a program input
// (written by a Source op: pd_op.data, builtin.parameter) -- "%N", N counting in the order the
// ops of each program write them; a temporary written again (in place) first becomes a new var
// from that write on, as in SSA. Vars no op writes keep their names.
void nameTemporariesByPosition(Job& job);

}  // namespace spopt
