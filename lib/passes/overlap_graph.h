#pragma once
// The dependency graph of one overlap region and the timing of an order over it: the list
// scheduler's (overlap_schedule.cpp) model of a region, apart from its policy.
#include <cstdint>
#include <vector>

#include "passes/overlap_support.h"

namespace spopt {

// Dependencies of a region as compressed adjacency lists, both directions.
struct RegionGraph {
  size_t n = 0;
  std::vector<uint32_t> succ_start, succ, pred_start, pred;
  std::vector<int64_t> ring;  // ring id of a collective, -1 for a compute op
  // A collective's ring as an index below ring_count (rings in order of first use in the region),
  // for per-ring state in flat arrays; 0 for a compute op.
  std::vector<uint32_t> ring_index;
  size_t ring_count = 0;
  // Bottom level: the op's cost plus the longest cost path from it to the region's end
  // (collectives' time on the wire included): the classic list-scheduling priority.
  std::vector<double> level;
  std::vector<uint8_t> feeds_coll;  // a collective reads what the op writes: run it first
  std::vector<double> cost;         // each op's, when built without costs given (below)
};

// `facts`, when given, supplies each op's ring, and its cost when `cost` is empty (OpFactsCache::
// cost, into RegionGraph::cost: read as the walk visits the op, whose vars are then at hand).
// `chain_rings`: each ring's collectives also depend on the ring's previous one (kept in program
// order); without, only data orders them.
RegionGraph buildRegionGraph(const std::vector<Op*>& region, const std::vector<double>& cost, const BufferAliases* aliases,
                             OpFactsCache* facts, bool chain_rings = true);
// Times `order`: compute ops one after another, each ring's collectives on their stream; with
// `colls`, each collective's outcome (exposed time charged to what waited for it).
double simulateOrder(const RegionGraph& g, const std::vector<uint32_t>& order, const std::vector<double>& cost,
                     std::vector<CollectiveOutcome>* colls, const std::vector<Op*>& region);

}  // namespace spopt
