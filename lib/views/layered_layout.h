#pragma once
// A layered (Sugiyama-style) layout of a small directed graph, without coordinates: which layer
// each node sits in and its place within the layer. The page turns these into coordinates once it
// knows the boxes' sizes (an expanded cluster is bigger than a collapsed one), so the expensive,
// combinatorial part runs here once per cluster and the page only does a linear pass.
//
// Steps, each near-linear: cycles are broken by a topological order that follows the node index
// (program order) wherever the edges leave a choice, and the edges it contradicts count as
// reversed; longest-path layering, then nodes pulled down towards their consumers; a bounded
// number of barycentric sweeps to cut edge crossings.
#include <cstdint>
#include <utility>
#include <vector>

namespace spopt {

struct LayeredLayout {
  std::vector<uint32_t> layer;     // per node
  std::vector<uint32_t> order;     // per node: its index within its layer, left to right
  std::vector<bool> reversed;      // per edge: it points against the layering (a cycle was broken)
  uint32_t layers = 0;
};

// `edges` are (from, to) node indices below `nodes`; self-loops and duplicates are allowed (they
// do not affect the layout). `sweeps` bounds the crossing-reduction passes (each down and up).
LayeredLayout layoutLayered(uint32_t nodes, const std::vector<std::pair<uint32_t, uint32_t>>& edges, int sweeps = 4);

}  // namespace spopt
