#pragma once
// One format-v1 job from one imported program per rank (rank = position in `mains`), with its
// process groups from the startup programs' c_comm_init ops or from --ring options.
#include <map>
#include <string>
#include <vector>

#include "io/paddle/formats.h"

namespace spopt::paddle {

struct AssembleOptions {
  std::vector<ImportedProgram> startups;          // empty, or one per main program
  // --ring ID=R0,R1,...: members in position order; replaces what c_comm_init says of that ring.
  std::map<int64_t, std::vector<int64_t>> rings;
};

// Throws InputError (one line, exit 2) on mismatched counts, two ranks claiming one position of a
// ring, a ring with a gap, or a collective on a ring nobody defined.
Json assembleJob(std::vector<ImportedProgram> mains, const AssembleOptions& options);

}  // namespace spopt::paddle
