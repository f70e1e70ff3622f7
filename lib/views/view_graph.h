#pragma once
// A rank's data-flow graph as drawn by the dot and html views: ops are nodes, a var is an edge
// from the op that last wrote it to each op that reads it (program inputs and fetched vars get
// small nodes of their own). For a diff the graph is the union of both programs: kept ops once,
// removed and added ops beside them, each node and edge marked with what happened to it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/job_diff.h"
#include "ir/ir.h"

namespace spopt {

enum class ViewStatus : uint8_t { Unchanged, Changed, Added, Removed };

struct ViewNode {
  enum Kind : uint8_t { OpNode, Input, Fetch, Folded } kind = OpNode;
  ViewStatus status = ViewStatus::Unchanged;
  const Op* op = nullptr;        // OpNode: the op (the AFTER one when it exists on both sides)
  uint32_t position = 0;         // OpNode: its position in its block
  std::string_view name;         // Input, Fetch: the var's name
  size_t folded_ops = 0;         // Folded: how many ops it stands for
  size_t folded_collectives = 0;  // Folded: how many of them are collectives
  std::vector<std::string> notes;  // Changed: what changed ("attrs.approximate", "moved")
};

struct ViewEdge {
  uint32_t from = 0, to = 0;
  const Var* var = nullptr;  // for the label (the AFTER var when it exists on both sides)
  ViewStatus status = ViewStatus::Unchanged;
  size_t more_vars = 0;      // an edge of a folded node stands for this many more vars
};

struct ViewGraph {
  std::vector<ViewNode> nodes;
  std::vector<ViewEdge> edges;
  bool bus_factors = false;
  std::string folded_noun = "ops";  // "… 12 unchanged ops" in a diff, "… 12 ops" otherwise
};

ViewGraph buildProgramGraph(const Program& p, bool bus_factors);
ViewGraph buildDiffGraph(const RankDiff& r, bool bus_factors);

// Folds every chain of at least `min_ops` unchanged ops (each the only op consumer of the one
// before) into one node, except collectives and ops next to a change, which stay. Linear.
void foldUnchangedChains(ViewGraph& g, size_t min_ops);

// Keeps the collectives and folds the compute between them: ops that are connected and lie after
// the same number of collectives on their deepest input path become one node. Linear.
void foldAllButCollectives(ViewGraph& g);

// For a diff: keeps changed ops and ops up to `context` hops from a change; folds the other
// unchanged ops into regions (as foldAllButCollectives does) of at least `min_ops` ops, each drawn
// as "… N unchanged ops" (naming the collectives among them). Long unchanged chains are such
// regions. Program inputs that feed only unchanged ops are left out. Linear.
void foldAwayFromChanges(ViewGraph& g, size_t context, size_t min_ops);

}  // namespace spopt
