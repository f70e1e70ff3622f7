#include "views/layered_layout.h"

#include <algorithm>
#include <functional>
#include <queue>

namespace spopt {
namespace {

// Adjacency in both directions as offsets into one array each (CSR): no vector per node.
struct Adjacency {
  std::vector<uint32_t> start, targets;
  Adjacency(uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges, bool forward) : start(n + 1, 0) {
    for (const auto& [a, b] : edges)
      if (a != b) ++start[(forward ? a : b) + 1];
    for (uint32_t i = 0; i < n; ++i) start[i + 1] += start[i];
    targets.resize(start[n]);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (const auto& [a, b] : edges)
      if (a != b) targets[fill[forward ? a : b]++] = forward ? b : a;
  }
  template <typename Fn>
  void each(uint32_t v, Fn fn) const {
    for (uint32_t i = start[v]; i < start[v + 1]; ++i) fn(targets[i]);
  }
};

// A topological order that takes the lowest-numbered ready node first; when a cycle leaves no
// node ready, the lowest-numbered node not yet placed goes next regardless of its inputs.
std::vector<uint32_t> topologicalRank(uint32_t n, const Adjacency& out, const Adjacency& in) {
  std::vector<uint32_t> pending(n, 0), rank(n, UINT32_MAX);
  for (uint32_t v = 0; v < n; ++v) in.each(v, [&](uint32_t) { ++pending[v]; });
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t v = 0; v < n; ++v)
    if (pending[v] == 0) ready.push(v);
  uint32_t next_rank = 0, scan = 0;
  while (next_rank < n) {
    uint32_t v;
    if (!ready.empty()) {
      v = ready.top();
      ready.pop();
      if (rank[v] != UINT32_MAX) continue;  // forced earlier while on a cycle
    } else {
      while (rank[scan] != UINT32_MAX) ++scan;
      v = scan;
    }
    rank[v] = next_rank++;
    out.each(v, [&](uint32_t w) {
      if (rank[w] == UINT32_MAX && --pending[w] == 0) ready.push(w);
    });
  }
  return rank;
}

}  // namespace

LayeredLayout layoutLayered(uint32_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges, int sweeps) {
  LayeredLayout out;
  out.layer.assign(n, 0);
  out.order.assign(n, 0);
  out.reversed.assign(edges.size(), false);
  if (n == 0) return out;
  Adjacency succ(n, edges, true), pred(n, edges, false);
  std::vector<uint32_t> rank = topologicalRank(n, succ, pred);
  std::vector<uint32_t> by_rank(n);
  for (uint32_t v = 0; v < n; ++v) by_rank[rank[v]] = v;
  for (size_t i = 0; i < edges.size(); ++i) out.reversed[i] = rank[edges[i].first] > rank[edges[i].second];

  // In the acyclic orientation a node's "upper" neighbours are those of lower rank.
  auto upper = [&](uint32_t v, auto fn) {
    auto visit = [&](uint32_t w) { if (rank[w] < rank[v]) fn(w); };
    pred.each(v, visit);
    succ.each(v, visit);
  };
  auto lower = [&](uint32_t v, auto fn) {
    auto visit = [&](uint32_t w) { if (rank[w] > rank[v]) fn(w); };
    pred.each(v, visit);
    succ.each(v, visit);
  };
  // Longest path from the sources...
  for (uint32_t v : by_rank) upper(v, [&](uint32_t w) { out.layer[v] = std::max(out.layer[v], out.layer[w] + 1); });
  // ...then each node as low as its consumers allow: a constant or a parameter read far down
  // sits next to its reader instead of at the top with a long edge.
  for (uint32_t i = n; i-- > 0;) {
    uint32_t v = by_rank[i];
    uint32_t lowest = UINT32_MAX;
    lower(v, [&](uint32_t w) { lowest = std::min(lowest, out.layer[w]); });
    if (lowest != UINT32_MAX && lowest > out.layer[v] + 1) out.layer[v] = lowest - 1;
  }
  for (uint32_t v = 0; v < n; ++v) out.layers = std::max(out.layers, out.layer[v] + 1);

  // Layers in rank order to start with; positions normalised to [0, 1) within each layer so that
  // a barycentre over neighbours in layers of different widths stays comparable.
  std::vector<std::vector<uint32_t>> rows(out.layers);
  for (uint32_t v : by_rank) rows[out.layer[v]].push_back(v);
  std::vector<double> position(n, 0);
  auto renumber = [&](std::vector<uint32_t>& row) {
    for (uint32_t i = 0; i < row.size(); ++i) {
      out.order[row[i]] = i;
      position[row[i]] = (i + 0.5) / static_cast<double>(row.size());
    }
  };
  for (auto& row : rows) renumber(row);
  std::vector<double> key(n, 0);
  auto sweep = [&](uint32_t l, bool from_above) {
    std::vector<uint32_t>& row = rows[l];
    if (row.size() < 2) return;
    for (uint32_t v : row) {
      double sum = 0;
      uint32_t count = 0;
      auto add = [&](uint32_t w) {
        if (from_above ? out.layer[w] < l : out.layer[w] > l) {
          sum += position[w];
          ++count;
        }
      };
      pred.each(v, add);
      succ.each(v, add);
      key[v] = count ? sum / count : position[v];  // no neighbours that side: stays where it is
    }
    std::stable_sort(row.begin(), row.end(), [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
    renumber(row);
  };
  for (int s = 0; s < sweeps; ++s) {
    for (uint32_t l = 1; l < out.layers; ++l) sweep(l, true);
    for (uint32_t l = out.layers - 1; l-- > 0;) sweep(l, false);
  }
  return out;
}

}  // namespace spopt
