// The dependency graph of an overlap region and the timing of an order (see overlap_graph.h).
#include "passes/overlap_graph.h"

#include <algorithm>

#include <absl/container/flat_hash_map.h>

#include "ir/prefetch.h"

namespace spopt {

RegionGraph buildRegionGraph(const std::vector<Op*>& region, const std::vector<double>& cost, const BufferAliases* aliases,
                             OpFactsCache* facts, bool chain_rings) {
  RegionGraph g;
  g.n = region.size();
  g.ring.assign(g.n, -1);
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  // Per var id (one program's vars): its last writer and the readers since, as a list in a flat
  // pool, in the order they read. Scratch kept per thread and reset through `touched`, so a
  // program of many regions costs its regions' size, not its var count per region.
  struct Scratch {
    std::vector<int32_t> writer, head, tail;  // by var id; head/tail index `pool`, -1: none
    std::vector<std::pair<uint32_t, int32_t>> pool;  // (reader, next)
    std::vector<uint32_t> touched;
  };
  thread_local Scratch sc;
  const size_t nv = g.n ? region.front()->block->program->next_var_id : 0;
  if (sc.writer.size() < nv) sc.writer.resize(nv, -1), sc.head.resize(nv, -1), sc.tail.resize(nv, -1);
  sc.pool.clear();
  sc.touched.clear();
  auto slot = [&](const VarRef& v) {
    const uint32_t id = aliases ? aliases->storageId(v) : v.id();
    if (sc.writer[id] == -1 && sc.head[id] == -1) sc.touched.push_back(id);
    return id;
  };
  absl::flat_hash_map<int64_t, uint32_t> index_of_ring;
  std::vector<uint32_t> last_of_ring;  // by ring index
  g.ring_index.assign(g.n, 0);
  const bool own_costs = cost.empty() && facts;
  if (own_costs) g.cost.resize(g.n);
  for (uint32_t i = 0; i < g.n; ++i) {
    lookAhead(region, i);
    const Op& op = *region[i];
    if (own_costs) g.cost[i] = facts->cost(op);
    for (const Slot& s : op.inputs)
      for (const Arg& a : s.args) {
        uint32_t id = slot(a.var);
        if (sc.writer[id] >= 0 && uint32_t(sc.writer[id]) != i) edges.emplace_back(uint32_t(sc.writer[id]), i);
        sc.pool.emplace_back(i, -1);
        int32_t k = int32_t(sc.pool.size() - 1);
        if (sc.tail[id] >= 0) sc.pool[size_t(sc.tail[id])].second = k;
        else sc.head[id] = k;
        sc.tail[id] = k;
      }
    for (const Slot& s : op.outputs)
      for (const Arg& a : s.args) {
        uint32_t id = slot(a.var);
        if (sc.writer[id] >= 0 && uint32_t(sc.writer[id]) != i) edges.emplace_back(uint32_t(sc.writer[id]), i);
        for (int32_t k = sc.head[id]; k >= 0; k = sc.pool[size_t(k)].second)
          if (sc.pool[size_t(k)].first != i) edges.emplace_back(sc.pool[size_t(k)].first, i);
        sc.head[id] = sc.tail[id] = -1;
        sc.writer[id] = int32_t(i);
      }
    if (auto ring = commRing(op, facts)) {
      g.ring[i] = *ring;
      auto [it, fresh] = index_of_ring.try_emplace(*ring, uint32_t(last_of_ring.size()));
      if (fresh) last_of_ring.push_back(i);
      else if (chain_rings) edges.emplace_back(last_of_ring[it->second], i);
      last_of_ring[it->second] = i;
      g.ring_index[i] = it->second;
    }
  }
  g.ring_count = last_of_ring.size();
  auto csr = [&](bool forward, std::vector<uint32_t>& start, std::vector<uint32_t>& list) {
    start.assign(g.n + 1, 0);
    for (auto [a, b] : edges) ++start[(forward ? a : b) + 1];
    for (size_t i = 0; i < g.n; ++i) start[i + 1] += start[i];
    list.resize(edges.size());
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (auto [a, b] : edges) list[fill[forward ? a : b]++] = forward ? b : a;
  };
  for (uint32_t id : sc.touched) sc.writer[id] = sc.head[id] = sc.tail[id] = -1;
  csr(true, g.succ_start, g.succ);
  csr(false, g.pred_start, g.pred);
  const std::vector<double>& costs = own_costs ? g.cost : cost;
  g.level.assign(g.n, 0);
  g.feeds_coll.assign(g.n, 0);
  for (size_t i = g.n; i-- > 0;) {
    double longest = 0;
    for (uint32_t k = g.succ_start[i]; k < g.succ_start[i + 1]; ++k) {
      longest = std::max(longest, g.level[g.succ[k]]);
      if (g.ring[i] < 0 && g.ring[g.succ[k]] >= 0) g.feeds_coll[i] = 1;
    }
    g.level[i] = costs[i] + longest;
  }
  return g;
}

double simulateOrder(const RegionGraph& g, const std::vector<uint32_t>& order, const std::vector<double>& cost,
                     std::vector<CollectiveOutcome>* colls, const std::vector<Op*>& region) {
  std::vector<double> finish(g.n, 0);
  std::vector<int32_t> coll_slot(g.n, -1);
  std::vector<double> ring_free(g.ring_count, 0);  // by ring index
  double now = 0;
  for (uint32_t i : order) {
    double ready = 0, data_ready = 0;  // data_ready: not counting the ring's own previous collective
    int32_t blocker = -1;  // the collective whose result the op waited for longest
    for (uint32_t k = g.pred_start[i]; k < g.pred_start[i + 1]; ++k) {
      uint32_t p = g.pred[k];
      if (finish[p] > ready) ready = finish[p], blocker = g.ring[p] >= 0 ? int32_t(p) : -1;
      if (g.ring[p] < 0 || g.ring[p] != g.ring[i]) data_ready = std::max(data_ready, finish[p]);
    }
    if (g.ring[i] >= 0) {
      double& free = ring_free[g.ring_index[i]];
      double start = std::max({now, ready, free});
      finish[i] = free = start + cost[i];
      if (colls) {
        coll_slot[i] = int32_t(colls->size());
        colls->push_back({region[i], i, cost[i], 0, start - std::max(now, data_ready), Limit::None});
      }
      continue;
    }
    if (ready > now && blocker >= 0 && colls && coll_slot[size_t(blocker)] >= 0)
      (*colls)[size_t(coll_slot[size_t(blocker)])].exposed_s += ready - now;
    now = std::max(now, ready) + cost[i];
    finish[i] = now;
  }
  for (double f : finish) now = std::max(now, f);
  return now;
}

}  // namespace spopt
