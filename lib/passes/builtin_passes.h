#pragma once
// The built-in passes: this list is the one place a pass is registered. Adding a pass: write
// lib/passes/NAME.cpp defining `PassInfo NAMEPass()` and add one X(NAMEPass) line below (and, if
// it belongs to the sequence-parallel chain, append it to kDefaultPipeline in pipeline.h).
// Explicit registration rather than static initialisers, because the linker drops unreferenced
// objects from the static library.
#include "passes/registry.h"

#define SPOPT_BUILTIN_PASSES(X) \
  X(fuseAllreduceSplitPass) \
  X(regatherActivationsPass) \
  X(splitMatmulGradPass) \
  X(overlapCollectivesPass) \
  X(decomposeCollectiveMatmulPass) \
  X(recomputeActivationsPass)

namespace spopt {

#define SPOPT_DECLARE_PASS(fn) PassInfo fn();
SPOPT_BUILTIN_PASSES(SPOPT_DECLARE_PASS)
#undef SPOPT_DECLARE_PASS

}  // namespace spopt
