#include "analysis/hang_check.h"

#include <algorithm>

#include "analysis/collectives.h"
#include "analysis/p2p.h"
#include "ir/json_pointer.h"
#include "ir/op_role.h"

namespace spopt {
namespace {

struct Wait {
  uint32_t on = kNoNode;
  HbEdge kind = HbEdge::Stream;
  bool peer = false;  // on a collective's peer, not along an edge
};

// What a node that did not run waits for: its earliest predecessor that did not run, or, when
// every predecessor ran, a member of its collective that did not arrive.
std::vector<Wait> blockers(const HappensBefore& g, const HbProgress& p) {
  const size_t n = g.nodes().size();
  std::vector<Wait> w(n);
  for (uint32_t u = 0; u < n; ++u) {
    if (p.ran[u]) continue;
    HappensBefore::Edges out = g.successors(u);
    for (size_t k = 0; k < out.size; ++k) {
      Wait& x = w[out.to[k]];
      if (x.on == kNoNode || u < x.on) x = {u, out.kind[k], false};
    }
  }
  for (uint32_t v = 0; v < n; ++v) {
    if (p.ran[v] || p.pending[v] > 0 || g.nodes()[v].collective == kNoNode) continue;
    for (uint32_t m : g.instances()[g.nodes()[v].collective].members)
      if (!p.ran[m] && p.pending[m] > 0) {
        w[v] = {m, HbEdge::Stream, true};
        break;
      }
  }
  return w;
}

// The first var of `inputs` that `outputs` also names.
std::string firstShared(const std::vector<Slot>& inputs, const std::vector<Slot>& outputs) {
  for (const Slot& x : inputs)
    for (const Arg& ax : x.args)
      for (const Slot& y : outputs)
        for (const Arg& by : y.args)
          if (ax.var && ax.var == by.var) return std::string(ax.var->name);
  return "";
}

// "waits in stream order for", "reads var \"x\" from", ...: the edge from `from` back to `to`.
std::string waitText(const HappensBefore& g, uint32_t from, const Wait& w) {
  if (w.peer) return "waits for its peer";
  const Op& op = *g.nodes()[from].op;
  const Op& on = *g.nodes()[w.on].op;
  switch (w.kind) {
    case HbEdge::Stream: return "waits in stream order for";
    case HbEdge::Ring: return "waits in its ring's issue order for";
    case HbEdge::Data: return "waits for var \"" + firstShared(op.inputs, on.outputs) + "\" from";
    case HbEdge::Reuse: return "waits to reuse a buffer for";
    case HbEdge::Event: return "waits for event '" + eventToRecord(on) + "' recorded by";
  }
  return "waits for";
}

}  // namespace

HangCycle findHangCycle(const HappensBefore& g, const HbProgress& p) {
  std::vector<Wait> w = blockers(g, p);
  uint32_t start = 0;
  while (start < g.nodes().size() && p.ran[start]) ++start;
  // Follow the waits until a node repeats: the path from its first visit is the cycle.
  std::vector<uint32_t> path;
  std::vector<uint32_t> seen_at(g.nodes().size(), kNoNode);
  for (uint32_t cur = start; cur != kNoNode && seen_at[cur] == kNoNode; cur = w[cur].on) {
    seen_at[cur] = uint32_t(path.size());
    path.push_back(cur);
  }
  HangCycle c;
  uint32_t back = path.empty() ? kNoNode : w[path.back()].on;
  if (back == kNoNode) {  // cannot happen for a walk that stopped short; say so rather than crash
    c.message = "hang: the ops' dependencies form a cycle: no order runs them all";
    return c;
  }
  c.nodes.assign(path.begin() + seen_at[back], path.end());
  std::rotate(c.nodes.begin(), std::min_element(c.nodes.begin(), c.nodes.end()), c.nodes.end());
  std::vector<int64_t> ranks;
  for (uint32_t n : c.nodes) {
    int64_t r = g.ranks()[g.nodes()[n].rank_index].rank;
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  }
  c.pointer = opPointerAt(*g.nodes()[c.nodes.front()].op, g.nodes()[c.nodes.front()].position);
  c.message = "hang: " + std::to_string(c.nodes.size()) + " ops on " + std::to_string(ranks.size()) +
              " rank(s) form a cycle of waits: " + g.describe(c.nodes.front());
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    uint32_t from = c.nodes[i];
    bool last = i + 1 == c.nodes.size();
    c.message += (i ? ", which " : " ") + waitText(g, from, w[from]) + " " + (last ? "the first" : g.describe(c.nodes[i + 1]));
  }
  return c;
}

HangReport checkHangs(const Job& job) {
  HappensBefore g(job);
  HangReport r;
  r.nodes = g.nodes().size();
  r.edges = g.edgeCount();
  r.instances = g.instances().size();
  auto pointerOf = [&](uint32_t n) { return opPointerAt(*g.nodes()[n].op, g.nodes()[n].position); };
  for (const UnmatchedCollective& u : g.unmatched()) {
    const CollectiveInstance& inst = g.instances()[u.instance];
    std::string missing;
    for (int64_t rank : job.group(inst.ring_id)->ranks) {
      bool has = !job.program(rank);
      for (uint32_t m : inst.members) has = has || g.ranks()[g.nodes()[m].rank_index].rank == rank;
      if (!has) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
    }
    r.errors.push_back({job.path, pointerOf(inst.members.front()),
                        "hang: " + g.describe(inst.members.front()) + " has no partner on rank(s) " + missing +
                            ", which issue fewer collectives on ring " + std::to_string(inst.ring_id) + ": it waits forever"});
  }
  for (uint32_t n : g.unmatchedP2P()) {
    const HbNode& node = g.nodes()[n];
    bool send = asPointToPoint(*node.op)->kind == P2PKind::Send;
    r.errors.push_back({job.path, pointerOf(n),
                        "hang: " + g.describe(n) + " has no partner: rank " + std::to_string(node.peer_rank) + " issues no matching " +
                            (send ? "receive" : "send") + ", so it waits forever"});
  }
  for (const CollectiveInstance& inst : g.instances()) {
    if (!inst.mismatched) continue;
    std::string who;
    for (uint32_t m : inst.members)
      who += (who.empty() ? "" : "; ") + describeSig(signatureOf(*g.nodes()[m].op)) + " on " + g.describe(m);
    r.errors.push_back({job.path, pointerOf(inst.members.front()),
                        "ring " + std::to_string(inst.ring_id) + " collective #" + std::to_string(inst.k) +
                            " pairs different collectives in execution order (sub-blocks run at their owning op): " + who});
  }
  if (r.errors.empty()) {
    HbProgress p = g.walk([](const uint32_t*, size_t) {}, [](uint32_t, uint32_t) {});
    if (p.ran_count < g.nodes().size()) {
      HangCycle c = findHangCycle(g, p);
      r.errors.push_back({job.path, c.pointer, c.message});
    }
  }
  for (const LostDependency& l : g.lostDependencies()) {
    std::string why = l.recorder == kNoNode ? "which no op of the rank records"
                                            : "recorded only later in program order, by " + g.describe(l.recorder);
    r.warnings.push_back({job.path, pointerOf(l.node),
                          "lost dependency: " + g.describe(l.node) + " waits for event '" + l.event + "', " + why +
                              ": the wait orders nothing (CUDA's rule)"});
  }
  return r;
}

}  // namespace spopt
