#include "views/view_graph.h"

#include <unordered_map>

#include "views/view_graph_internal.h"

namespace spopt {

using view_detail::EdgeKey;
using view_detail::EdgeKeyHash;
using view_detail::kNone;

namespace {

constexpr uint8_t kBefore = 1, kAfter = 2;

ViewStatus sidesStatus(uint8_t sides) {
  if (sides == kBefore) return ViewStatus::Removed;
  if (sides == kAfter) return ViewStatus::Added;
  return ViewStatus::Unchanged;
}

// Builds the union graph one program at a time: each side walks its ops in order, remembering
// the node that last wrote each var, and records edges keyed by (writer, reader, var name) so that
// an edge both programs have is drawn once.
class Builder {
 public:
  explicit Builder(ViewGraph& g) : g_(g) {}

  uint32_t addOpNode(const Op& op, uint32_t position, ViewStatus status) {
    ViewNode n;
    n.status = status;
    n.op = &op;
    n.position = position;
    g_.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(g_.nodes.size() - 1);
  }

  // `node_of[i]`: the node of the side's i-th op in OpOrder.
  void walk(const Program& p, const OpOrder& order, const std::vector<uint32_t>& node_of, uint8_t side) {
    std::unordered_map<const Var*, uint32_t> last_writer;
    last_writer.reserve(order.ops.size());
    for (const OpSlot& s : order.ops) {
      uint32_t node = node_of[s.index];
      for (const Slot& slot : s.op->inputs)
        for (const Arg& a : slot.args) {
          auto w = last_writer.find(a.var);
          uint32_t from = w != last_writer.end() ? w->second : varNode(ViewNode::Input, a.var, side);
          addEdge(from, node, a.var, side);
        }
      for (const Slot& slot : s.op->outputs)
        for (const Arg& a : slot.args) last_writer[a.var] = node;
    }
    if (p.blocks.empty()) return;
    for (std::string_view name : p.fetch) {
      const Var* v = p.blocks.front()->lookup(name);
      auto w = v ? last_writer.find(v) : last_writer.end();
      if (w != last_writer.end()) addEdge(w->second, varNode(ViewNode::Fetch, v, side), v, side);
    }
  }

  // Sets the status of edges and var nodes from the sides they were seen on.
  void finish(const std::unordered_map<std::string_view, bool>* changed_vars) {
    for (size_t i = 0; i < edge_sides_.size(); ++i) {
      ViewEdge& e = g_.edges[i];
      e.status = sidesStatus(edge_sides_[i]);
      if (e.status == ViewStatus::Unchanged && changed_vars && changed_vars->count(e.var->name))
        e.status = ViewStatus::Changed;
    }
    for (const auto& [key, node] : var_nodes_) g_.nodes[node].status = sidesStatus(var_node_sides_[node]);
  }

 private:
  uint32_t varNode(ViewNode::Kind kind, const Var* v, uint8_t side) {
    std::string key = (kind == ViewNode::Input ? "i" : "f") + std::string(v->name);
    auto [it, fresh] = var_nodes_.try_emplace(std::move(key), static_cast<uint32_t>(g_.nodes.size()));
    if (fresh) {
      ViewNode n;
      n.kind = kind;
      n.name = v->name;
      g_.nodes.push_back(std::move(n));
    }
    var_node_sides_[it->second] |= side;
    return it->second;
  }

  void addEdge(uint32_t from, uint32_t to, const Var* v, uint8_t side) {
    auto [it, fresh] = edge_index_.try_emplace(EdgeKey{from, to, v->name}, static_cast<uint32_t>(g_.edges.size()));
    if (fresh) {
      g_.edges.push_back({from, to, v, ViewStatus::Unchanged, 0});
      edge_sides_.push_back(0);
    } else if (side == kAfter) {
      g_.edges[it->second].var = v;  // label with the AFTER var
    }
    edge_sides_[it->second] |= side;
  }

  ViewGraph& g_;
  std::unordered_map<EdgeKey, uint32_t, EdgeKeyHash> edge_index_;
  std::vector<uint8_t> edge_sides_;
  std::unordered_map<std::string, uint32_t> var_nodes_;
  std::unordered_map<uint32_t, uint8_t> var_node_sides_;
};

}  // namespace

ViewGraph buildProgramGraph(const Program& p, bool bus_factors) {
  ViewGraph g;
  g.bus_factors = bus_factors;
  OpOrder order(p);
  Builder b(g);
  std::vector<uint32_t> node_of(order.ops.size());
  for (const OpSlot& s : order.ops) node_of[s.index] = b.addOpNode(*s.op, s.position, ViewStatus::Unchanged);
  b.walk(p, order, node_of, kBefore | kAfter);
  b.finish(nullptr);
  return g;
}

ViewGraph buildDiffGraph(const RankDiff& r, bool bus_factors) {
  ViewGraph g;
  g.bus_factors = bus_factors;
  g.folded_noun = "unchanged ops";
  const OpOrder& before = *r.before_order;
  const OpOrder& after = *r.after_order;
  std::vector<const OpEntry*> entry_of_after(after.ops.size(), nullptr);
  for (const OpEntry& e : r.ops)
    if (e.kind != OpEntry::Removed) entry_of_after[e.after] = &e;

  Builder b(g);
  std::vector<uint32_t> node_of_after(after.ops.size()), node_of_before(before.ops.size(), kNone);
  for (const OpSlot& s : after.ops) {
    const OpEntry* e = entry_of_after[s.index];
    ViewStatus status = !e ? ViewStatus::Unchanged : e->kind == OpEntry::Added ? ViewStatus::Added : ViewStatus::Changed;
    node_of_after[s.index] = b.addOpNode(*s.op, s.position, status);
    if (e && e->kind == OpEntry::Changed) {
      auto& notes = g.nodes.back().notes;
      if (e->moved) notes.push_back("moved");
      for (const ValueChange& c : e->changes) notes.push_back(c.what);
    }
    uint32_t matched = r.matching.before_of_after[s.index];
    if (matched != OpMatching::kNone) node_of_before[matched] = node_of_after[s.index];
  }
  for (const OpSlot& s : before.ops)
    if (node_of_before[s.index] == kNone) node_of_before[s.index] = b.addOpNode(*s.op, s.position, ViewStatus::Removed);

  if (r.before) b.walk(*r.before, before, node_of_before, kBefore);
  if (r.after) b.walk(*r.after, after, node_of_after, kAfter);
  std::unordered_map<std::string_view, bool> changed_vars;
  for (const VarEntry& v : r.vars)
    if (v.kind == VarEntry::Changed) changed_vars[v.after->name] = true;
  b.finish(&changed_vars);
  return g;
}

}  // namespace spopt
