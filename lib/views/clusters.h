#pragma once
// Ops grouped into clusters for the html views, as a reader thinks of a model: one cluster per
// name scope (`/layer_0/`, `/loss/`, `/optimizer/`; nested scopes nest), the forward and backward
// ops of a scope as sub-clusters, ops without a scope by training phase ("(forward)", ...).
// Each cluster knows what a collapsed box shows (ops, collectives per ring, the vars crossing its
// border) and how its children are laid out (layered_layout.h), so that the page never lays out
// more than one cluster's children at a time.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "views/layered_layout.h"
#include "views/view_graph.h"

namespace spopt {

struct RingSummary {
  size_t count = 0;
  int64_t bytes = 0;     // payload, or ring traffic with bus factors; collectives of known size
  size_t unknown = 0;    // collectives of unknown size
};

// A child of a cluster: one of its sub-clusters or one of its own ops (a view-graph node).
struct ClusterItem {
  bool is_cluster = false;
  uint32_t id = 0;  // cluster index or view-node index
};

// Data flowing between two children of a cluster: all view-graph edges between ops inside them,
// bundled, counted by distinct var.
struct ClusterEdge {
  uint32_t from = 0, to = 0;    // indices into Cluster::items
  size_t vars = 0;              // distinct vars
  std::vector<const Var*> sample;  // the first few, for the label
  ViewStatus status = ViewStatus::Unchanged;  // the "most changed" of its edges
};

struct Cluster {
  std::string name;           // "layer_0", "forward", "(backward)", "ops 1-256"
  uint32_t parent = UINT32_MAX;
  uint32_t depth = 0;         // root 0
  std::vector<ClusterItem> items;  // sub-clusters and ops, in program order of their first op
  std::vector<ClusterEdge> edges;
  LayeredLayout layout;       // of `items` under `edges`

  // Totals over everything inside.
  size_t ops = 0;
  size_t changed = 0;         // ops not Unchanged (diff)
  std::map<int64_t, RingSummary> rings;
  size_t vars_in = 0, vars_out = 0;       // distinct vars crossing the border
  std::vector<const Var*> sample_in, sample_out;
  uint32_t first_node = UINT32_MAX;       // its first op in program order
};

struct ClusterOptions {
  size_t max_items = 300;     // a cluster with more direct ops is cut into consecutive chunks...
  size_t chunk = 200;         // ...of this many ops
  size_t min_phase_split = 4; // a scope with fewer ops keeps forward and backward together
  size_t samples = 3;
  int sweeps = 4;
};

struct ClusterTree {
  std::vector<Cluster> clusters;  // [0] is the root: the whole program
  std::vector<uint32_t> cluster_of_node;  // per view node: its innermost cluster (UINT32_MAX: not an op)
};

// The training phase of an op_role bit set: "forward", "backward", "optimizer", "loss", or "" when
// the op has no op_role.
std::string_view rolePhase(const Op& op);

// Clusters of the ops of `g` (Input, Fetch and Folded nodes are not clustered). Linear in the
// graph apart from the per-cluster layouts, each bounded by the cluster's own size.
ClusterTree buildClusters(const ViewGraph& g, const ClusterOptions& options = {});

}  // namespace spopt
