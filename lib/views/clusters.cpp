#include "views/clusters.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "analysis/comm_stats.h"
#include "views/view_graph_internal.h"

namespace spopt {

using view_detail::kNone;

std::string_view rolePhase(const Op& op) {
  auto role = op.attrs.getInt("op_role");
  if (!role) return "";
  if (*role & 2) return "optimizer";
  if (*role & 256) return "loss";
  if (*role & 1) return "backward";
  return "forward";
}

namespace {

// Scopes the auto-parallel planner gives the ops it inserts (reshards): they belong with the
// layer they sit in, not in one cluster of their own that every layer would point into and out of.
bool plannerScope(std::string_view scope) { return scope.rfind("/auto_parallel/", 0) == 0; }

std::vector<std::string> scopeSegments(std::string_view scope) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < scope.size()) {
    size_t j = scope.find('/', i);
    if (j == std::string_view::npos) j = scope.size();
    if (j > i) out.emplace_back(scope.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// "optimizer_17" -> "optimizer"; "" when the name does not end in _<digits>.
std::string_view numberedBase(std::string_view name) {
  size_t us = name.rfind('_');
  if (us == std::string_view::npos || us == 0 || us + 1 == name.size()) return "";
  for (size_t i = us + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return "";
  return name.substr(0, us);
}

struct PairHash {
  size_t operator()(const std::pair<uint64_t, const void*>& p) const {
    return std::hash<uint64_t>{}(p.first) * 0x9E3779B97F4A7C15ull ^ std::hash<const void*>{}(p.second);
  }
};

class TreeBuilder {
 public:
  TreeBuilder(const ViewGraph& g, const ClusterOptions& o) : g_(g), o_(o) {
    t_.clusters.push_back(Cluster{});
    t_.clusters[0].name = "(program)";
    t_.cluster_of_node.assign(g.nodes.size(), kNone);
  }

  ClusterTree build() {
    assignScopes();
    splitPhases();
    chunkLargeClusters();
    groupManyClusters();
    summarize();
    orderItems();
    bundleEdges();
    for (Cluster& c : t_.clusters) {
      std::vector<std::pair<uint32_t, uint32_t>> pairs;
      pairs.reserve(c.edges.size());
      for (const ClusterEdge& e : c.edges) pairs.emplace_back(e.from, e.to);
      c.layout = layoutLayered(static_cast<uint32_t>(c.items.size()), pairs, o_.sweeps);
    }
    return std::move(t_);
  }

 private:
  bool isOp(uint32_t v) const { return g_.nodes[v].kind == ViewNode::OpNode; }

  uint32_t child(uint32_t parent, const std::string& name) {
    auto [it, fresh] = children_.try_emplace({parent, name}, static_cast<uint32_t>(t_.clusters.size()));
    if (fresh) {
      Cluster c;
      c.name = name;
      c.parent = parent;
      c.depth = t_.clusters[parent].depth + 1;
      t_.clusters.push_back(std::move(c));
    }
    return it->second;
  }

  // Each op's scope path; planner ops take the cluster of the op producing their first input
  // (else of the op before them); scope families of tiny numbered scopes (Paddle names each
  // optimizer op's scope /optimizer_N/) fold into one cluster.
  void assignScopes() {
    const size_t n = g_.nodes.size();
    std::vector<std::vector<std::string>> paths(n);
    std::vector<bool> inherits(n, false);
    for (uint32_t v = 0; v < n; ++v) {
      if (!isOp(v)) continue;
      const Op& op = *g_.nodes[v].op;
      std::string scope = op.attrs.getString("op_namescope").value_or("");
      if (plannerScope(scope)) {
        inherits[v] = true;
        continue;
      }
      paths[v] = scopeSegments(scope);
      if (paths[v].empty()) {
        std::string_view phase = rolePhase(op);
        paths[v].push_back(phase.empty() ? "(top)" : "(" + std::string(phase) + ")");
      }
    }
    std::unordered_map<std::string, std::pair<size_t, size_t>> families;  // base -> (names, ops)
    std::unordered_set<std::string> seen;
    for (uint32_t v = 0; v < n; ++v) {
      if (paths[v].empty()) continue;
      std::string_view base = numberedBase(paths[v][0]);
      if (base.empty()) continue;
      auto& f = families[std::string(base)];
      f.first += seen.insert(paths[v][0]).second;
      ++f.second;
    }
    for (uint32_t v = 0; v < n; ++v) {
      if (paths[v].empty()) continue;
      auto it = families.find(std::string(numberedBase(paths[v][0])));
      if (it != families.end() && it->second.first >= 4 && it->second.second < 3 * it->second.first)
        paths[v][0] = it->first;
    }
    std::vector<uint32_t> first_pred(n, kNone);
    for (const ViewEdge& e : g_.edges)
      if (isOp(e.from) && first_pred[e.to] == kNone) first_pred[e.to] = e.from;
    uint32_t previous = kNone;
    for (uint32_t v = 0; v < n; ++v) {
      if (!isOp(v)) continue;
      uint32_t c = 0;
      if (!inherits[v]) {
        for (const std::string& s : paths[v]) c = child(c, s);
      } else if (first_pred[v] != kNone && t_.cluster_of_node[first_pred[v]] != kNone) {
        c = t_.cluster_of_node[first_pred[v]];
      } else if (previous != kNone) {
        c = t_.cluster_of_node[previous];
      } else {
        c = child(0, "(top)");
      }
      t_.cluster_of_node[v] = c;
      previous = v;
    }
  }

  std::vector<std::vector<uint32_t>> directOps() const {
    std::vector<std::vector<uint32_t>> direct(t_.clusters.size());
    for (uint32_t v = 0; v < g_.nodes.size(); ++v)
      if (t_.cluster_of_node[v] != kNone) direct[t_.cluster_of_node[v]].push_back(v);
    return direct;
  }

  void splitPhases() {
    auto direct = directOps();
    for (uint32_t c = 1; c < direct.size(); ++c) {
      if (direct[c].size() < o_.min_phase_split || t_.clusters[c].name.front() == '(') continue;
      std::string_view first = rolePhase(*g_.nodes[direct[c][0]].op);
      bool mixed = std::any_of(direct[c].begin(), direct[c].end(), [&](uint32_t v) { return rolePhase(*g_.nodes[v].op) != first; });
      if (!mixed) continue;
      for (uint32_t v : direct[c]) {
        std::string_view phase = rolePhase(*g_.nodes[v].op);
        t_.cluster_of_node[v] = child(c, phase.empty() ? "(no role)" : std::string(phase));
      }
    }
  }

  void chunkLargeClusters() {
    auto direct = directOps();
    for (uint32_t c = 0; c < direct.size(); ++c) {
      if (direct[c].size() <= o_.max_items) continue;
      for (size_t i = 0; i < direct[c].size(); i += o_.chunk) {
        size_t end = std::min(direct[c].size(), i + o_.chunk);
        uint32_t chunk = child(c, "ops " + std::to_string(i + 1) + "\u2013" + std::to_string(end));
        for (size_t k = i; k < end; ++k) t_.cluster_of_node[direct[c][k]] = chunk;
      }
    }
  }

  // A cluster with more than max_items sub-clusters (the root of a model with 1,000 layers) gets
  // them grouped, consecutive in program order, `chunk` per group ("layer_0 … layer_199"), so
  // that no level of the page draws more than max_items boxes.
  void groupManyClusters() {
    const size_t n = t_.clusters.size();
    std::vector<uint32_t> first(n, kNone);
    for (uint32_t v = 0; v < g_.nodes.size(); ++v)
      for (uint32_t c = t_.cluster_of_node[v]; c != kNone && first[c] == kNone; c = t_.clusters[c].parent) first[c] = v;
    std::vector<std::vector<uint32_t>> subs(n);
    for (uint32_t c = 1; c < n; ++c) subs[t_.clusters[c].parent].push_back(c);
    bool moved = false;
    for (uint32_t c = 0; c < n; ++c) {
      if (subs[c].size() <= o_.max_items) continue;
      std::stable_sort(subs[c].begin(), subs[c].end(), [&](uint32_t a, uint32_t b) { return first[a] < first[b]; });
      // The numbered family that makes the crowd (layer_N) is grouped; the few others (loss,
      // optimizer) stay beside the groups, unless they are a crowd themselves.
      std::unordered_map<std::string_view, size_t> family;
      for (uint32_t x : subs[c]) ++family[numberedBase(t_.clusters[x].name)];
      auto crowd = std::max_element(family.begin(), family.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      std::string_view base = crowd->first;
      bool by_family = !base.empty() && subs[c].size() - crowd->second < o_.max_items;
      std::vector<uint32_t> grouped;
      for (uint32_t x : subs[c])
        if (!by_family || numberedBase(t_.clusters[x].name) == base) grouped.push_back(x);
      for (size_t i = 0; i < grouped.size(); i += o_.chunk) {
        size_t end = std::min(grouped.size(), i + o_.chunk);
        uint32_t group = child(c, t_.clusters[grouped[i]].name + " \u2026 " + t_.clusters[grouped[end - 1]].name);
        for (size_t k = i; k < end; ++k) t_.clusters[grouped[k]].parent = group;
      }
      moved = true;
    }
    if (!moved) return;
    // Depths below a new group grew by one; parents may now come after their children.
    std::vector<bool> done(t_.clusters.size(), false);
    done[0] = true;
    std::function<uint32_t(uint32_t)> depth = [&](uint32_t c) -> uint32_t {
      if (!done[c]) {
        t_.clusters[c].depth = depth(t_.clusters[c].parent) + 1;
        done[c] = true;
      }
      return t_.clusters[c].depth;
    };
    for (uint32_t c = 0; c < t_.clusters.size(); ++c) depth(c);
  }

  void summarize() {
    for (uint32_t v = 0; v < g_.nodes.size(); ++v) {
      uint32_t leaf = t_.cluster_of_node[v];
      if (leaf == kNone) continue;
      const ViewNode& node = g_.nodes[v];
      auto coll = asCollective(*node.op);
      std::optional<int64_t> bytes;
      if (coll && communicates(*coll)) bytes = collectiveBytes(*node.op, *coll, *node.op->block->program->job, g_.bus_factors);
      for (uint32_t c = leaf; c != kNone; c = t_.clusters[c].parent) {
        Cluster& cl = t_.clusters[c];
        ++cl.ops;
        cl.changed += node.status != ViewStatus::Unchanged;
        cl.first_node = std::min(cl.first_node, v);
        if (coll && communicates(*coll)) {
          RingSummary& r = cl.rings[coll->ring_id];
          ++r.count;
          if (bytes) r.bytes += *bytes;
          else ++r.unknown;
        }
      }
    }
  }

  void orderItems() {
    item_of_cluster_.assign(t_.clusters.size(), kNone);
    item_of_node_.assign(g_.nodes.size(), kNone);
    for (uint32_t c = 1; c < t_.clusters.size(); ++c) t_.clusters[t_.clusters[c].parent].items.push_back({true, c});
    for (uint32_t v = 0; v < g_.nodes.size(); ++v)
      if (t_.cluster_of_node[v] != kNone) t_.clusters[t_.cluster_of_node[v]].items.push_back({false, v});
    for (Cluster& c : t_.clusters) {
      auto first = [&](const ClusterItem& i) { return i.is_cluster ? t_.clusters[i.id].first_node : i.id; };
      std::stable_sort(c.items.begin(), c.items.end(), [&](const ClusterItem& a, const ClusterItem& b) { return first(a) < first(b); });
      for (uint32_t i = 0; i < c.items.size(); ++i) (c.items[i].is_cluster ? item_of_cluster_ : item_of_node_)[c.items[i].id] = i;
    }
  }

  // Every op-to-op edge becomes an edge between the two children of the innermost cluster that
  // holds both ends (bundled per pair), and counts as crossing the border of every cluster
  // between an end and that common cluster.
  void bundleEdges() {
    struct Key {
      uint32_t cluster, from, to;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      size_t operator()(const Key& k) const { return (size_t{k.cluster} * 0x9E3779B1u ^ k.from) * 0x85EBCA77u ^ k.to; }
    };
    std::unordered_map<Key, uint32_t, KeyHash> bundle;
    std::unordered_set<std::pair<uint64_t, const void*>, PairHash> counted;
    auto note = [&](std::vector<const Var*>& sample, size_t& count, uint64_t key, const Var* var) {
      if (!counted.insert({key, var}).second) return;
      ++count;
      if (sample.size() < o_.samples) sample.push_back(var);
    };
    for (const ViewEdge& e : g_.edges) {
      uint32_t a = t_.cluster_of_node[e.from], b = t_.cluster_of_node[e.to];
      if (a == kNone || b == kNone || e.from == e.to) continue;
      uint32_t from_item = item_of_node_[e.from], to_item = item_of_node_[e.to];
      while (a != b) {
        // Climb from the deeper end (both when level); each cluster left behind is crossed.
        uint32_t da = t_.clusters[a].depth, db = t_.clusters[b].depth;
        if (da >= db) {
          Cluster& c = t_.clusters[a];
          note(c.sample_out, c.vars_out, uint64_t{a} << 1, e.var);
          from_item = item_of_cluster_[a];
          a = c.parent;
        }
        if (db >= da) {
          Cluster& c = t_.clusters[b];
          note(c.sample_in, c.vars_in, uint64_t{b} << 1 | 1, e.var);
          to_item = item_of_cluster_[b];
          b = c.parent;
        }
      }
      if (from_item == to_item) continue;
      Cluster& lca = t_.clusters[a];
      auto [it, fresh] = bundle.try_emplace(Key{a, from_item, to_item}, static_cast<uint32_t>(lca.edges.size()));
      if (fresh) lca.edges.push_back({from_item, to_item, 0, {}, e.status});
      ClusterEdge& ce = lca.edges[it->second];
      // A bundle of vars that all went the same way says so; a mixed one is "changed".
      if (ce.status != e.status) ce.status = ViewStatus::Changed;
      // Bundles are told apart by their position in the cluster; tag the key so that it never
      // meets a border key (those are even/odd cluster ids below 2^33).
      note(ce.sample, ce.vars, (uint64_t{1} << 63) | (uint64_t{a} << 32) | it->second, e.var);
    }
  }

  const ViewGraph& g_;
  const ClusterOptions& o_;
  ClusterTree t_;
  struct ChildKeyHash {
    size_t operator()(const std::pair<uint32_t, std::string>& k) const { return std::hash<std::string>{}(k.second) ^ k.first * 0x9E3779B1u; }
  };
  std::unordered_map<std::pair<uint32_t, std::string>, uint32_t, ChildKeyHash> children_;
  std::vector<uint32_t> item_of_cluster_, item_of_node_;
};

}  // namespace

ClusterTree buildClusters(const ViewGraph& g, const ClusterOptions& options) { return TreeBuilder(g, options).build(); }

}  // namespace spopt
