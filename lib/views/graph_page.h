#pragma once
// The clustered, interactive graph of the html views (`graph --format html`, `diff --format html`):
// one self-contained piece of html (inline SVG element, CSS, script and the data as embedded
// JSON; nothing fetched) that starts with every cluster collapsed, expands one on a click, pans,
// zooms, searches and shows an op's details. Per cluster the layering is precomputed here
// (clusters.h); the page only assigns coordinates to what is open, so its work follows what
// the reader opens, not the program's size.
#include <cstdint>
#include <string>
#include <vector>

#include "views/clusters.h"
#include "views/view_graph.h"

namespace spopt {

struct PageRank {
  int64_t rank = 0;
  const ViewGraph* graph = nullptr;  // unfolded
  const ClusterTree* clusters = nullptr;
};

struct GraphPageOptions {
  bool diff = false;
  std::vector<int64_t> job_ranks;  // every rank of the job, for the picker (those not embedded are listed, disabled)
  std::string note;                // shown above the graph ("ranks 0-3 embedded", ...)
  size_t open_budget = 300;        // diff: clusters with changes start open while at most this many boxes show
};

// The embedded data of one rank (JSON). Exposed for tests.
std::string graphPageData(const PageRank& rank);

// The graph section: rank picker, search box, the SVG viewport, the details panel, its script.
std::string graphPageSection(const std::vector<PageRank>& ranks, const GraphPageOptions& options);

// The page's CSS (goes into the <head>) and script.
extern const char* const kGraphPageCss;
extern const char* const kGraphPageScript;

}  // namespace spopt
