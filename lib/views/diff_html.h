#pragma once
// The diff as one self-contained html page: the verdict and per-rank summaries, the drawn rank's
// data-flow graph (inline SVG from Graphviz), per rank a before/after table of collectives and
// bytes moved, and the list of changes.
#include <string>

#include "analysis/job_diff.h"

namespace spopt {

// A graph to draw as SVG. Graphviz's layout grows much faster than linearly (a 2,400-node graph
// takes it about 15 s), so a graph of more than `max_nodes` nodes is not drawn: the page says so.
struct GraphDrawing {
  std::string dot;
  size_t nodes = 0;
  size_t max_nodes = 0;
  bool tooLarge() const { return nodes > max_nodes; }
  // The advice shown (or thrown) when the graph is too large.
  std::string tooLargeMessage() const;
};

// Throws InputError when Graphviz's dot is missing or fails.
std::string renderDiffHtml(const JobDiff& diff, const RankDiff& drawn, const GraphDrawing& graph);

// One rank's graph of one job, with its collectives per ring.
std::string renderGraphHtml(const Program& p, const GraphDrawing& graph, const std::string& title);

}  // namespace spopt
