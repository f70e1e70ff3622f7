#include "analysis/happens_before.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include <absl/container/flat_hash_map.h>

#include "analysis/collectives.h"
#include "analysis/liveness.h"
#include "analysis/p2p.h"
#include "ir/json_pointer.h"
#include "ir/op_role.h"

namespace spopt {

const char* hbEdgeName(HbEdge e) {
  switch (e) {
    case HbEdge::Stream: return "stream order";
    case HbEdge::Data: return "data";
    case HbEdge::Reuse: return "buffer reuse";
    case HbEdge::Event: return "event";
    case HbEdge::Ring: return "ring issue order";
  }
  return "?";
}

namespace {

// One program's ops in the order they run: the entry block, each owning op followed by its
// sub-blocks (recursively); then the blocks no op owns, in blocks order.
class ExecutionOrder {
 public:
  explicit ExecutionOrder(const Program& p) : p_(p), visited_(p.blocks.size(), 0) {
    size_t total = 0;
    for (const auto& b : p.blocks) total += b->ops.size();
    ops.reserve(total);  // grown by doubling, the list would leave its smaller copies behind as garbage
    const Block* entry = nullptr;
    for (const auto& b : p.blocks)
      if (b->parent_idx < 0) {
        entry = b.get();
        break;
      }
    if (!entry && !p.blocks.empty()) entry = p.blocks.front().get();
    if (entry) visit(*entry);
    for (const auto& b : p.blocks)
      if (!visited_[b->position]) visit(*b);
  }
  struct Item {
    const Op* op;
    uint32_t position;
  };
  std::vector<Item> ops;

 private:
  void visit(const Block& b) {
    visited_[b.position] = 1;  // before the ops: a cycle of sub_block attrs cannot loop
    uint32_t position = 0;
    for (const Op& op : b.ops) {
      ops.push_back({&op, position++});
      if (p_.blocks.size() < 2) continue;  // no sub-blocks: skip reading every op's attrs
      for (int64_t idx : subBlocksOf(op))
        if (const Block* sub = p_.block(idx); sub && !visited_[sub->position]) visit(*sub);
    }
  }
  const Program& p_;
  std::vector<char> visited_;
};

template <typename F>
void forEachVar(const std::vector<Slot>& slots, F f) {
  for (const Slot& s : slots)
    for (const Arg& a : s.args)
      if (a.var) f(*a.var);
}

// The verifier's rule for collectives paired across ranks: same kind, reduction, dtype and element
// count, an unknown count (-1) pairing with an unknown one (replay refuses those; validate does not).
bool pairable(const CollectiveSig& x, const CollectiveSig& y) {
  return x.kind == y.kind && x.reduce == y.reduce && x.dtype == y.dtype && x.numel == y.numel;
}

}  // namespace

HappensBefore::HappensBefore(const Job& job, OpFactsCache* given) : job_(job) {
  OpFactsCache own;
  OpFactsCache& facts = given ? *given : own;
  size_t total = 0;
  for (const auto& p : job.programs)
    for (const auto& b : p->blocks) total += b->ops.size();
  // Sized once: a node or edge list grown by doubling copies itself and faults in fresh pages.
  nodes_.reserve(total);
  edge_from_.reserve(total * 3);
  edge_kind_.reserve(total * 3);
  in_degree_.assign(total, 0);
  group_of_.reserve(total);
  // (ring, k) -> instance: per ring, a flat list by k; the first member's signature beside it.
  absl::flat_hash_map<int64_t, std::vector<uint32_t>> instance_of;
  std::vector<CollectiveSig> first_sig;
  for (size_t ri = 0; ri < job.programs.size(); ++ri) {
    comm_.clear();
    buildProgram(*job.programs[ri], uint32_t(ri), facts);
    for (const CommNode& cn : comm_) {
      HbNode& n = nodes_[cn.node];
      std::vector<uint32_t>& by_k = instance_of[cn.ring_id];
      if (by_k.size() <= n.ring_k) by_k.resize(n.ring_k + 1, kNoNode);
      if (by_k[n.ring_k] == kNoNode) {
        by_k[n.ring_k] = uint32_t(instances_.size());
        instances_.push_back({cn.ring_id, n.ring_k, {}, false});
        first_sig.push_back(cn.sig);
      }
      uint32_t k = by_k[n.ring_k];
      CollectiveInstance& inst = instances_[k];
      if (!inst.members.empty() && !pairable(first_sig[k], cn.sig)) inst.mismatched = true;
      inst.members.push_back(cn.node);
      n.collective = k;
    }
  }
  comm_.clear();
  comm_.shrink_to_fit();
  // A member present in the file that issues fewer collectives on the ring never arrives.
  absl::flat_hash_map<int64_t, size_t> present_on;  // ring -> member ranks with a program
  for (uint32_t k = 0; k < instances_.size(); ++k) {
    const CollectiveInstance& inst = instances_[k];
    auto [it, fresh] = present_on.try_emplace(inst.ring_id, 0);
    if (fresh)
      if (const ProcessGroup* g = job.group(inst.ring_id))
        for (int64_t r : g->ranks) it->second += job.program(r) ? 1 : 0;
    if (inst.members.size() < it->second) unmatched_.push_back({k, it->second});
  }
  pairPointToPoint(facts);
  buildCsr();
}

// Joins each send with its receive (the k-th of a channel on both sides) and each group's members
// into instances: the connected sets of both relations (union-find), members in node order.
void HappensBefore::pairPointToPoint(OpFactsCache& facts) {
  std::vector<uint32_t> parent(nodes_.size());
  for (uint32_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto root = [&](uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto join = [&](uint32_t a, uint32_t b) { parent[root(a)] = root(b); };
  // (ring, from, to, k) -> the send's node and the receive's node
  std::map<std::tuple<int64_t, int64_t, int64_t, size_t>, std::pair<uint32_t, uint32_t>> pairs;
  std::vector<uint32_t> p2p_nodes;
  for (uint32_t id = 0; id < nodes_.size(); ++id) {
    const HbNode& n = nodes_[id];
    if (n.peer_rank < 0) continue;
    p2p_nodes.push_back(id);
    if (group_of_[id] != id) join(id, group_of_[id]);
    const std::optional<PointToPoint>& p = facts.comm(facts.facts(*n.op)).p2p;
    int64_t self = ranks_[n.rank_index].rank;
    bool send = p->kind == P2PKind::Send;
    auto& pair = pairs.try_emplace({p->ring_id, send ? self : n.peer_rank, send ? n.peer_rank : self, n.ring_k}, kNoNode, kNoNode).first->second;
    (send ? pair.first : pair.second) = id;
  }
  for (const auto& entry : pairs) {
    const auto& [send, recv] = entry.second;
    if (send != kNoNode && recv != kNoNode) join(send, recv);
    else unmatched_p2p_.push_back(send != kNoNode ? send : recv);
  }
  std::sort(unmatched_p2p_.begin(), unmatched_p2p_.end());
  std::map<uint32_t, uint32_t> instance_of_root;
  for (uint32_t id : p2p_nodes) {
    auto [it, made] = instance_of_root.try_emplace(root(id), uint32_t(instances_.size()));
    if (made) {
      const std::optional<PointToPoint>& p = facts.comm(facts.facts(*nodes_[id].op)).p2p;
      instances_.push_back({p->ring_id, nodes_[id].ring_k, {}, false, true});
    }
    instances_[it->second].members.push_back(id);
    nodes_[id].collective = it->second;
  }
  group_of_.clear();
}

void HappensBefore::buildProgram(const Program& p, uint32_t rank_index, OpFactsCache& facts) {
  HbRank rank{p.rank, {"default"}};
  ExecutionOrder order(p);
  // Per op, what the loop below reads of it (copied: the cache's entries may move as it grows).
  struct Read {
    uint32_t stream;
    uint32_t comm;  // OpFacts::comm
    bool events, communicates;
  };
  std::vector<Read> read;
  read.reserve(order.ops.size());
  // The cache's stream names -> this rank's stream index, in order of first use.
  std::vector<uint32_t> local_stream(facts.streamCount(), kNoNode);
  local_stream[0] = 0;
  for (const auto& item : order.ops) {
    const OpFacts& f = facts.facts(*item.op);
    if (local_stream.size() < facts.streamCount()) local_stream.resize(facts.streamCount(), kNoNode);
    uint32_t& s = local_stream[f.stream];
    if (s == kNoNode) {
      s = uint32_t(rank.streams.size());
      rank.streams.push_back(facts.streamName(f.stream));
    }
    read.push_back({s, f.comm, f.has_events, f.communicates});
  }
  const size_t streams = rank.streams.size();
  std::vector<uint32_t> stream_tail(streams, kNoNode);
  const size_t vars = size_t(p.next_var_id) + 1;
  std::vector<uint32_t> last_writer(vars, kNoNode);
  // The latest reader of each var on each stream since its last write. On one stream, stream
  // order already covers them: not kept.
  std::vector<uint32_t> last_reader(streams > 1 ? vars * streams : 0, kNoNode);
  std::unordered_map<std::string, uint32_t> recorder;
  std::unordered_map<int64_t, uint32_t> last_on_ring;
  std::unordered_map<int64_t, size_t> issued_on_ring;
  std::map<std::tuple<int64_t, int64_t, P2PKind>, size_t> issued_on_channel;  // (ring, peer rank, kind) -> count
  std::vector<std::pair<uint32_t, std::string>> waits_unrecorded;  // (node, event)
  std::unordered_map<std::string, uint32_t> first_recorder_after;  // event -> first later recorder

  for (size_t i = 0; i < order.ops.size(); ++i) {
    const Op& op = *order.ops[i].op;
    uint32_t id = uint32_t(nodes_.size());
    HbNode n;
    n.op = &op;
    n.rank_index = rank_index;
    n.position = order.ops[i].position;
    n.stream = read[i].stream;
    auto comm = [&](size_t k) -> const CommFacts& { return facts.comm(read[k].comm); };
    const std::optional<PointToPoint>& p2p = comm(i).p2p;
    // sameP2PGroup's rule (p2p.h), on the facts: both sends or receives, one ring, one stream.
    const bool joins_group = p2p && i > 0 && order.ops[i - 1].op->block == op.block &&
                             order.ops[i - 1].position + 1 == order.ops[i].position && comm(i - 1).p2p &&
                             comm(i - 1).p2p->ring_id == p2p->ring_id && read[i - 1].stream == read[i].stream;
    group_first_ = joins_group ? group_first_ : p2p ? id : kNoNode;
    group_of_.push_back(group_first_ == kNoNode ? id : group_first_);
    if (p2p)
      if (auto partner = p2pPartner(job_, p.rank, *p2p)) {
        n.peer_rank = *partner;
        n.ring_k = issued_on_channel[{p2p->ring_id, *partner, p2p->kind}]++;
      }
    addEdge(stream_tail[n.stream], id, HbEdge::Stream);
    stream_tail[n.stream] = id;
    forEachVar(op.inputs, [&](const Var& v) {
      if (v.id < vars) addEdge(last_writer[v.id], id, HbEdge::Data);
    });
    forEachVar(op.outputs, [&](const Var& v) {
      if (v.id >= vars) return;
      addEdge(last_writer[v.id], id, HbEdge::Reuse);
      if (!last_reader.empty())
        for (size_t t = 0; t < streams; ++t) addEdge(last_reader[v.id * streams + t], id, HbEdge::Reuse);
    });
    if (read[i].events)
      for (const std::string& e : eventsToWait(op)) {
        if (auto r = recorder.find(e); r != recorder.end()) addEdge(r->second, id, HbEdge::Event);
        else waits_unrecorded.emplace_back(id, e);
      }
    if (read[i].communicates) {
      const int64_t ring_id = comm(i).coll.ring_id;
      comm_.push_back({id, ring_id, comm(i).sig});
      auto [last, first_on_ring] = last_on_ring.try_emplace(ring_id, id);
      if (!first_on_ring) addEdge(std::exchange(last->second, id), id, HbEdge::Ring);
      n.ring_k = issued_on_ring[ring_id]++;
    } else if (p2p && p2p->ring_id >= 0) {  // one communicator per ring issues its sends and receives in order too
      auto [last, first_on_ring] = last_on_ring.try_emplace(p2p->ring_id, id);
      if (!first_on_ring) addEdge(std::exchange(last->second, id), id, HbEdge::Ring);
    }
    if (std::string e = read[i].events ? eventToRecord(op) : std::string(); !e.empty()) {
      recorder[e] = id;
      first_recorder_after.try_emplace(e, id);
    }
    if (!last_reader.empty()) {
      forEachVar(op.inputs, [&](const Var& v) {
        if (v.id < vars) last_reader[v.id * streams + n.stream] = id;
      });
      forEachVar(op.outputs, [&](const Var& v) {
        if (v.id < vars) std::fill_n(last_reader.begin() + ptrdiff_t(v.id * streams), streams, kNoNode);
      });
    }
    forEachVar(op.outputs, [&](const Var& v) {
      if (v.id < vars) last_writer[v.id] = id;
    });
    nodes_.push_back(n);
  }
  group_first_ = kNoNode;
  // A wait on an event not yet recorded: recorded later (the first recorder after it), or never.
  for (auto& [node, event] : waits_unrecorded) {
    auto r = first_recorder_after.find(event);
    uint32_t later = r != first_recorder_after.end() && r->second > node ? r->second : kNoNode;
    lost_.push_back({node, std::move(event), later});
  }
  ranks_.push_back(std::move(rank));
}

void HappensBefore::buildCsr() {
  offsets_.assign(nodes_.size() + 1, 0);
  in_degree_.resize(nodes_.size(), 0);
  for (uint32_t from : edge_from_) ++offsets_[from + 1];
  for (size_t i = 0; i < nodes_.size(); ++i) offsets_[i + 1] += offsets_[i];
  succ_.resize(edge_from_.size());
  succ_kind_.resize(edge_from_.size());
  std::vector<uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
  size_t e = 0;  // the edges in insertion order, which is by target
  for (uint32_t to = 0; to < nodes_.size(); ++to)
    for (uint32_t k = 0; k < in_degree_[to]; ++k, ++e) {
      const uint32_t from = edge_from_[e];
      succ_[fill[from]] = to;
      succ_kind_[fill[from]++] = edge_kind_[e];
    }
  edge_from_ = {};
  edge_kind_ = {};
}

std::string HappensBefore::describe(uint32_t node) const {
  const HbNode& n = nodes_[node];
  const HbRank& r = ranks_[n.rank_index];
  std::string s = "rank " + std::to_string(r.rank) + " stream '" + r.streams[n.stream] + "' " + std::string(n.op->type);
  if (n.peer_rank >= 0) {
    auto p = asPointToPoint(*n.op);
    s += " ring " + std::to_string(p->ring_id) + (p->kind == P2PKind::Send ? " to rank " : " from rank ") + std::to_string(n.peer_rank) +
         " #" + std::to_string(n.ring_k);
  } else if (n.collective != kNoNode) {
    s += " ring " + std::to_string(instances_[n.collective].ring_id) + " #" + std::to_string(n.ring_k);
  }
  return s + " (" + opPointerAt(*n.op, n.position) + ")";
}

}  // namespace spopt
