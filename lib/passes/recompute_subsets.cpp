#include "passes/recompute_subsets.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

namespace spopt {

std::vector<std::vector<size_t>> connectedComponents(const NodeAdjacency& adj) {
  std::vector<std::vector<size_t>> out;
  std::vector<char> seen(adj.size(), 0);
  for (size_t start = 0; start < adj.size(); ++start) {
    if (seen[start]) continue;
    std::vector<size_t> comp{start}, stack{start};
    seen[start] = 1;
    while (!stack.empty()) {
      size_t u = stack.back();
      stack.pop_back();
      for (size_t v : adj[u])
        if (!seen[v]) seen[v] = 1, comp.push_back(v), stack.push_back(v);
    }
    std::sort(comp.begin(), comp.end());
    out.push_back(std::move(comp));
  }
  return out;
}

std::vector<std::vector<size_t>> connectedSubsets(const std::vector<size_t>& component, const NodeAdjacency& adj, size_t cap) {
  std::vector<std::vector<size_t>> out;
  for (size_t u : component) out.push_back({u});
  if (component.size() < 2) return out;
  // Past 64 nodes (no generated layer comes near) only the singletons and the whole.
  if (component.size() <= 64) {
    std::unordered_map<size_t, size_t> local;
    for (size_t i = 0; i < component.size(); ++i) local[component[i]] = i;
    std::vector<uint64_t> near(component.size(), 0);
    for (size_t i = 0; i < component.size(); ++i)
      for (size_t v : adj[component[i]])
        if (auto it = local.find(v); it != local.end()) near[i] |= uint64_t(1) << it->second;
    const uint64_t whole = component.size() == 64 ? ~uint64_t(0) : (uint64_t(1) << component.size()) - 1;
    std::vector<uint64_t> level;
    for (size_t i = 0; i < component.size(); ++i) level.push_back(uint64_t(1) << i);
    std::unordered_set<uint64_t> seen(level.begin(), level.end());
    size_t offered = 0;
    while (!level.empty() && offered < cap) {
      std::vector<uint64_t> next;
      for (uint64_t mask : level) {
        uint64_t grow = 0;
        for (size_t i = 0; i < component.size(); ++i)
          if (mask >> i & 1) grow |= near[i];
        grow &= ~mask;
        for (size_t i = 0; i < component.size() && offered < cap; ++i) {
          if (!(grow >> i & 1) || !seen.insert(mask | uint64_t(1) << i).second) continue;
          next.push_back(mask | uint64_t(1) << i);
          if (next.back() == whole) continue;  // added last, once
          std::vector<size_t> subset;
          for (size_t j = 0; j < component.size(); ++j)
            if (next.back() >> j & 1) subset.push_back(component[j]);
          out.push_back(std::move(subset));
          ++offered;
        }
      }
      level = std::move(next);
    }
  }
  out.push_back(component);
  return out;
}

std::vector<std::vector<size_t>> subsetConflicts(const std::vector<std::vector<size_t>>& subsets, const NodeAdjacency& adj) {
  std::vector<std::vector<size_t>> holders(adj.size()), out(subsets.size());
  for (size_t k = 0; k < subsets.size(); ++k)
    for (size_t u : subsets[k]) holders[u].push_back(k);
  std::vector<size_t> stamp(subsets.size(), SIZE_MAX);
  for (size_t k = 0; k < subsets.size(); ++k) {
    stamp[k] = k;
    auto touch = [&](size_t u) {
      for (size_t other : holders[u])
        if (stamp[other] != k) stamp[other] = k, out[k].push_back(other);
    };
    for (size_t u : subsets[k]) {
      touch(u);
      for (size_t v : adj[u]) touch(v);
    }
    std::sort(out[k].begin(), out[k].end());
  }
  return out;
}

}  // namespace spopt
