#pragma once
// The budget candidates of recompute-activations as a graph problem, apart from the IR: nodes are
// the finest segments (saved activations whose walks share an op), an edge joins two when one's
// copies read what the other recomputes. A connected component is a maximal recomputable forward
// segment (softmax output, dropout output and mask, the context its GEMM over V makes, ...); any
// connected subset of it is a sub-chain that can be recomputed as one segment (the copies of the
// later ops reading the copies of the earlier ones).
//
// Two offered subsets conflict (never chosen together) when they share a node or an edge joins
// them: the later one's copies would read the forward var the earlier one meant to free, so the
// pair is worth only what their union, offered on its own, is worth.
//
// Linear-ish: a component's subsets are enumerated smallest first up to a cap (components are a
// layer's attention or MLP, a handful of nodes); the whole component is always offered.
#include <cstddef>
#include <vector>

namespace spopt {

using NodeAdjacency = std::vector<std::vector<size_t>>;  // [node] -> neighbours (undirected)

// The connected components of the graph, each sorted, in order of their smallest node.
std::vector<std::vector<size_t>> connectedComponents(const NodeAdjacency& adj);
// The connected subsets of `component`, each sorted: the singletons first (in node order), then
// larger ones by size, at most `cap` of two or more nodes, plus the whole component.
std::vector<std::vector<size_t>> connectedSubsets(const std::vector<size_t>& component, const NodeAdjacency& adj, size_t cap);
// [subset] -> the other subsets it conflicts with (sharing a node or joined by an edge).
std::vector<std::vector<size_t>> subsetConflicts(const std::vector<std::vector<size_t>>& subsets, const NodeAdjacency& adj);

}  // namespace spopt
