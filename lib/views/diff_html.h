#pragma once
// The diff as one self-contained html page: the verdict and per-rank summaries, the drawn rank's
// data-flow graph (the clustered view of graph_page.h: changed ops marked, clusters without
// changes closed), per rank a before/after table of collectives and bytes moved, and the list of
// changes. The graph page of one job is the same view without the marks.
#include <string>

#include "analysis/job_diff.h"

namespace spopt {

// A graph to draw as SVG through Graphviz (`graph --format svg`). Graphviz's layout grows much
// faster than linearly (a 2,400-node graph takes it about 15 s), so a graph of more than
// `max_nodes` nodes is refused.
struct GraphDrawing {
  std::string dot;
  size_t nodes = 0;
  size_t max_nodes = 0;
  bool tooLarge() const { return nodes > max_nodes; }
  // The advice shown (or thrown) when the graph is too large.
  std::string tooLargeMessage() const;
};

struct HtmlGraphOptions {
  bool bus_factors = false;
  // Every rank is embedded (the page's rank picker switches between them) while the job's ops, all
  // ranks together, are at most this many; past it only the drawn rank is, and the picker says how
  // to draw another.
  size_t all_ranks_max_ops = 20000;
  size_t open_budget = 300;  // diff: boxes shown at most when clusters with changes start open
  size_t max_change_lines = 3000;  // diff: lines of the list of changes shown
};

// `drawn` is shown first. Needs no external tool.
std::string renderDiffHtml(const JobDiff& diff, const RankDiff& drawn, const HtmlGraphOptions& options);

// Rank `rank`'s graph of `job` (which must have it), with its collectives per ring.
std::string renderGraphHtml(const Job& job, int64_t rank, const std::string& title, const HtmlGraphOptions& options);

}  // namespace spopt
