#pragma once
// The diff as one self-contained html page: the verdict and per-rank summaries, the drawn rank's
// data-flow graph (inline SVG from Graphviz), per rank a before/after table of collectives and
// bytes moved, and the list of changes.
#include <string>

#include "analysis/job_diff.h"

namespace spopt {

// `dot` is the drawn rank's graph; throws InputError when Graphviz's dot is missing or fails.
std::string renderDiffHtml(const JobDiff& diff, const RankDiff& drawn, const std::string& dot);

// One rank's graph of one job, with its collectives per ring.
std::string renderGraphHtml(const Program& p, const std::string& dot, const std::string& title, bool bus_factors);

}  // namespace spopt
