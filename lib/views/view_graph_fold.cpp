// Folding a view graph: chains (graph --fold), regions around kept ops (diff, graph --only comm),
// and the contraction of groups into "… N ops" nodes that they share.
#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "views/view_graph.h"
#include "views/view_graph_internal.h"

namespace spopt {

using view_detail::EdgeKey;
using view_detail::EdgeKeyHash;
using view_detail::isCollective;
using view_detail::kNone;

namespace {

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(uint32_t a, uint32_t b) { parent[find(a)] = find(b); }
};

bool isOp(const ViewNode& n) { return n.kind == ViewNode::OpNode; }

// Replaces each group of at least `min_ops` ops (by union-find root) with one Folded node, drops
// edges inside a group and duplicate edges, and drops input nodes that only fed folded groups.
void contract(ViewGraph& g, UnionFind& groups, size_t min_ops, const std::vector<bool>& keep = {}) {
  const size_t n = g.nodes.size();
  std::vector<uint32_t> size(n, 0), collectives(n, 0);
  auto kept = [&](uint32_t v) { return !keep.empty() && keep[v]; };
  for (uint32_t v = 0; v < n; ++v)
    if (isOp(g.nodes[v]) && !kept(v)) {
      ++size[groups.find(v)];
      collectives[groups.find(v)] += isCollective(*g.nodes[v].op);
    }
  auto folds = [&](uint32_t v) {
    return isOp(g.nodes[v]) && !kept(v) && size[groups.find(v)] >= min_ops && min_ops > 0;
  };

  // An input is dropped when every edge out of it goes into a folded group.
  std::vector<bool> input_needed(n, false);
  for (const ViewEdge& e : g.edges)
    if (!folds(e.to)) input_needed[e.from] = true;

  ViewGraph out;
  out.bus_factors = g.bus_factors;
  out.folded_noun = g.folded_noun;
  std::vector<uint32_t> new_id(n, kNone);
  for (uint32_t v = 0; v < n; ++v) {
    const ViewNode& node = g.nodes[v];
    if (node.kind == ViewNode::Input && !input_needed[v]) continue;
    uint32_t key = folds(v) ? groups.find(v) : v;
    if (new_id[key] == kNone) {
      new_id[key] = static_cast<uint32_t>(out.nodes.size());
      if (folds(v)) {
        ViewNode f;
        f.kind = ViewNode::Folded;
        f.folded_ops = size[key];
        f.folded_collectives = collectives[key];
        out.nodes.push_back(std::move(f));
      } else {
        out.nodes.push_back(node);
      }
    }
    new_id[v] = new_id[key];
  }
  // Edges into or out of a folded node are bundled per node pair and status ("y +3 vars"): a
  // folded region often passes many vars to the next, and one arrow per var buries the picture.
  std::unordered_map<EdgeKey, uint32_t, EdgeKeyHash> seen;
  static const std::string_view kStatusKey[] = {"=", "~", "+", "-"};
  for (const ViewEdge& e : g.edges) {
    uint32_t from = new_id[e.from], to = new_id[e.to];
    if (from == kNone || to == kNone || from == to) continue;
    bool bundle = out.nodes[from].kind == ViewNode::Folded || out.nodes[to].kind == ViewNode::Folded;
    std::string_view key = bundle ? kStatusKey[static_cast<int>(e.status)] : e.var->name;
    auto [it, fresh] = seen.try_emplace(EdgeKey{from, to, key}, static_cast<uint32_t>(out.edges.size()));
    if (fresh)
      out.edges.push_back({from, to, e.var, e.status, 0});
    else if (bundle && out.edges[it->second].var->name != e.var->name)
      ++out.edges[it->second].more_vars;
  }
  g = std::move(out);
}

}  // namespace

void foldUnchangedChains(ViewGraph& g, size_t min_ops) {
  if (min_ops == 0) return;
  const size_t n = g.nodes.size();
  // The single op predecessor / successor of each op, kNone when none, kMany when several.
  constexpr uint32_t kMany = kNone - 1;
  std::vector<uint32_t> pred(n, kNone), succ(n, kNone);
  std::vector<bool> near_change(n, false);
  auto note = [&](uint32_t& slot, uint32_t other) { slot = slot == kNone || slot == other ? other : kMany; };
  for (const ViewEdge& e : g.edges) {
    const ViewNode &from = g.nodes[e.from], &to = g.nodes[e.to];
    if (!isOp(from) || !isOp(to)) continue;
    note(succ[e.from], e.to);
    note(pred[e.to], e.from);
    if (to.status != ViewStatus::Unchanged || e.status != ViewStatus::Unchanged) near_change[e.from] = true;
    if (from.status != ViewStatus::Unchanged || e.status != ViewStatus::Unchanged) near_change[e.to] = true;
  }
  // Collectives stay visible: what a rank communicates is what a reviewer looks for.
  auto foldable = [&](uint32_t v) {
    return isOp(g.nodes[v]) && g.nodes[v].status == ViewStatus::Unchanged && !near_change[v] &&
           !isCollective(*g.nodes[v].op);
  };
  UnionFind groups(n);
  for (uint32_t u = 0; u < n; ++u) {
    uint32_t v = succ[u];
    if (v < kMany && foldable(u) && foldable(v) && pred[v] == u) groups.unite(u, v);
  }
  contract(g, groups, min_ops);
}

namespace {

// Drops the program-input nodes none of whose edges `shows`, with their edges.
template <typename ShowsFn>
void dropInputs(ViewGraph& g, ShowsFn shows) {
  std::vector<bool> needed(g.nodes.size(), false);
  for (const ViewEdge& e : g.edges)
    if (shows(e)) needed[e.from] = true;
  std::vector<uint32_t> new_id(g.nodes.size());
  std::vector<ViewNode> nodes;
  for (uint32_t v = 0; v < g.nodes.size(); ++v) {
    if (g.nodes[v].kind == ViewNode::Input && !needed[v]) {
      new_id[v] = kNone;
      continue;
    }
    new_id[v] = static_cast<uint32_t>(nodes.size());
    nodes.push_back(std::move(g.nodes[v]));
  }
  std::vector<ViewEdge> edges;
  for (ViewEdge e : g.edges) {
    if (new_id[e.from] == kNone) continue;
    e.from = new_id[e.from];
    e.to = new_id[e.to];
    edges.push_back(e);
  }
  g.nodes = std::move(nodes);
  g.edges = std::move(edges);
}

// Folds every op that `keep` rejects into a region: ops connected to each other that have the same
// number of kept ops on their deepest path from the inputs. Regions of fewer than `min_ops` ops
// stay as they are. Grouping by that depth keeps the folded graph acyclic: an edge between two
// regions always goes to a deeper one, and a kept op's output lands one level deeper still.
void foldRegions(ViewGraph& g, const std::vector<bool>& keep, size_t min_ops) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<uint32_t>> out_edges(n);
  std::vector<uint32_t> pending(n, 0);
  for (uint32_t i = 0; i < g.edges.size(); ++i) {
    out_edges[g.edges[i].from].push_back(i);
    ++pending[g.edges[i].to];
  }
  // Depths in topological order (Kahn). A union of two programs can hold a cycle where a rewrite
  // reordered ops; nodes on it keep the depth reached so far, which only costs acyclicity there.
  std::vector<uint32_t> depth(n, 0), ready;
  for (uint32_t v = 0; v < n; ++v)
    if (pending[v] == 0) ready.push_back(v);
  while (!ready.empty()) {
    uint32_t u = ready.back();
    ready.pop_back();
    uint32_t next = depth[u] + (isOp(g.nodes[u]) && keep[u] ? 1u : 0u);
    for (uint32_t i : out_edges[u]) {
      uint32_t v = g.edges[i].to;
      depth[v] = std::max(depth[v], next);
      if (--pending[v] == 0) ready.push_back(v);
    }
  }
  UnionFind groups(n);
  auto folds = [&](uint32_t v) { return isOp(g.nodes[v]) && !keep[v]; };
  for (const ViewEdge& e : g.edges)
    if (folds(e.from) && folds(e.to) && depth[e.from] == depth[e.to]) groups.unite(e.from, e.to);
  contract(g, groups, min_ops, keep);
}

}  // namespace

void foldAllButCollectives(ViewGraph& g) {
  std::vector<bool> keep(g.nodes.size(), false);
  for (uint32_t v = 0; v < g.nodes.size(); ++v) keep[v] = isOp(g.nodes[v]) && isCollective(*g.nodes[v].op);
  foldRegions(g, keep, 2);
  // Parameters and other inputs of the compute say nothing about communication.
  dropInputs(g, [&](const ViewEdge& e) { return g.nodes[e.to].kind == ViewNode::OpNode && isCollective(*g.nodes[e.to].op); });
}

void foldAwayFromChanges(ViewGraph& g, size_t context, size_t min_ops) {
  if (min_ops == 0) return;
  const size_t n = g.nodes.size();
  std::vector<std::vector<uint32_t>> neighbours(n);
  std::vector<uint32_t> hops(n, UINT32_MAX), frontier;
  auto reach = [&](uint32_t v) {
    if (hops[v] != 0) {
      hops[v] = 0;
      frontier.push_back(v);
    }
  };
  for (const ViewEdge& e : g.edges) {
    if (!isOp(g.nodes[e.from]) || !isOp(g.nodes[e.to])) continue;
    neighbours[e.from].push_back(e.to);
    neighbours[e.to].push_back(e.from);
    // A var whose type changed marks both its ends; an edge that was added or removed has a
    // changed op at one end already (an op whose inputs were rewired is itself changed).
    if (e.status == ViewStatus::Changed) {
      reach(e.from);
      reach(e.to);
    }
  }
  for (uint32_t v = 0; v < n; ++v)
    if (isOp(g.nodes[v]) && g.nodes[v].status != ViewStatus::Unchanged) reach(v);
  // Breadth-first, `context` hops out from every change.
  for (size_t h = 1; h <= context && !frontier.empty(); ++h) {
    std::vector<uint32_t> next;
    for (uint32_t u : frontier)
      for (uint32_t v : neighbours[u])
        if (hops[v] == UINT32_MAX) {
          hops[v] = static_cast<uint32_t>(h);
          next.push_back(v);
        }
    frontier = std::move(next);
  }
  std::vector<bool> keep(n, false);
  for (uint32_t v = 0; v < n; ++v) keep[v] = isOp(g.nodes[v]) && hops[v] != UINT32_MAX;
  foldRegions(g, keep, min_ops);
  // Program inputs (parameters, the learning rate...) of unchanged ops only add long edges.
  dropInputs(g, [&](const ViewEdge& e) {
    return e.status != ViewStatus::Unchanged || g.nodes[e.to].status != ViewStatus::Unchanged;
  });
}

}  // namespace spopt

