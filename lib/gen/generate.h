#pragma once
// `sp-opt gen`: writes a whole job (format v1) for the options, streaming it rank by rank.
// The text has the layout of io/writer.h, so loading and writing it back gives the same bytes.
#include <string>

#include "gen/options.h"

namespace spopt {
class AtomicFile;
}

namespace spopt::gen {

struct GenStats {
  int64_t ranks = 0, vars = 0, ops = 0;  // vars and ops summed over the ranks
};

// Checks the options (InputError on bad ones), then writes the job. Same options, same bytes.
GenStats generateJob(const GenOptions& o, AtomicFile& out);
std::string generateJobText(const GenOptions& o);

}  // namespace spopt::gen
