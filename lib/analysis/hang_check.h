#pragma once
// Proves a job hang-free before any run: its happens-before graph over every rank
// (happens_before.h, the simulator's graph) has no cycle, and every ring collective has a partner
// on each member rank. What replay would wait on forever is an error that names every rank,
// stream and op on the cycle, in order; a wait on an event not recorded before it (it orders
// nothing: CUDA's rule) is a lost dependency, a warning (an error when strict).
#include <string>
#include <vector>

#include "analysis/happens_before.h"
#include "support/error.h"

namespace spopt {

struct HangCycle {
  std::vector<uint32_t> nodes;  // each waits for the next; the last for the first
  std::string pointer;          // the first op's JSON pointer
  std::string message;
};
// The cycle among the nodes a walk could not run (progress.ran_count < node count): every such
// node waits on another that did not run, so following those waits comes back to a node. Linear.
HangCycle findHangCycle(const HappensBefore& graph, const HbProgress& progress);

struct HangReport {
  std::vector<Diagnostic> errors;    // cycles, collectives without a partner, mismatched pairings
  std::vector<Diagnostic> warnings;  // lost dependencies
  size_t nodes = 0, edges = 0, instances = 0;
};
HangReport checkHangs(const Job& job);

}  // namespace spopt
