#pragma once
// The built-in passes, one function per pass file. Adding a pass: write lib/passes/NAME.cpp
// defining its PassInfo, declare it here, list it in registry.cpp (and, if it belongs to the
// sequence-parallel chain, append it to kDefaultPipeline in pipeline.h).
#include "passes/registry.h"

namespace spopt {

PassInfo fuseAllreduceSplitPass();  // fuse_allreduce_split.cpp

}  // namespace spopt
