#pragma once
// The happens-before graph of one training step over every rank at once: what the simulator
// (simulate.h) schedules and what the hang check (hang_check.h) proves acyclic. One builder, so a
// job the simulator can schedule is exactly a job the hang check passes.
//
// A node is one op of one rank. Each program is walked from its entry block in program order; an
// op owning sub-blocks (attr `sub_block` or `blocks`) is followed by its sub-blocks' ops, so they
// run at their owning op; blocks no op owns follow the entry block, in blocks order. Edges are the
// waits replay makes (runtime/stream_plan.h), each pointing back in program order:
//  - Stream: the previous op on the same execution stream;
//  - Data: the last writer of each var the op reads;
//  - Reuse: the last writer and every reader since of each var the op writes (an in-place write
//    must not replace a value another stream still has to read);
//  - Event: the op that last recorded, earlier in program order, each event the op waits for. An
//    event awaited but never recorded, or recorded only later, orders nothing (CUDA's rule): a
//    LostDependency, kept for the hang check to report;
//  - Ring: the previous communicating collective of the same ring on the rank (a communicator
//    runs its collectives in issue order, whatever stream each is on).
// Across ranks, the k-th communicating collective of a ring on every member rank is one
// CollectiveInstance: its members start together, once each is ready. Point-to-point ops
// (analysis/p2p.h) join an instance too: the k-th send of a channel (ring, from, to) with its k-th
// receive, and the ops of one group (sameP2PGroup: issued at once) together, so an instance is a
// connected set of pairs and groups. A group's members have no edges among themselves; an
// ungrouped send waits for its receive (a rendezvous, as replay's backends run it), so sends that
// wait on each other in a cycle are a hang.
// Building is linear in ops + args; walk() is Kahn's algorithm, linear in nodes + edges.
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/op_facts.h"
#include "analysis/ring_order.h"
#include "ir/ir.h"

namespace spopt {

inline constexpr uint32_t kNoNode = UINT32_MAX;

enum class HbEdge : uint8_t { Stream, Data, Reuse, Event, Ring };
const char* hbEdgeName(HbEdge e);  // "stream order", "data", ...

struct HbNode {
  const Op* op = nullptr;
  uint32_t rank_index = 0;        // index in Job::programs (and HappensBefore::ranks())
  uint32_t stream = 0;            // index in the rank's stream names; 0 is "default"
  uint32_t position = 0;          // index in its block (JSON pointers without a scan)
  uint32_t collective = kNoNode;  // index into instances()
  size_t ring_k = 0;              // for a collective: its position in the ring's issue order;
                                  // for a send or receive: its position in its channel
  int64_t peer_rank = -1;         // for a send or receive: the partner's rank (-1: none)
};

struct CollectiveInstance {
  int64_t ring_id = 0;
  size_t k = 0;
  std::vector<uint32_t> members;  // nodes, one per member rank that has a program (job order)
  bool mismatched = false;        // members differ in kind, dtype or size (their pairing is wrong)
  bool p2p = false;               // sends and receives: pairs and groups, not a whole ring
};

struct HbRank {
  int64_t rank = 0;
  std::vector<std::string> streams;  // "default" first
};

struct LostDependency {
  uint32_t node = 0;        // the op that waits
  std::string event;
  uint32_t recorder = kNoNode;  // the op recording it later in program order, or none
};

// A ring collective with fewer members than the ring has programs: some member rank issues fewer
// collectives on the ring and never reaches this one.
struct UnmatchedCollective {
  uint32_t instance = 0;
  size_t present = 0;  // member ranks with a program
};

// Where a walk got to: a node runs once its predecessors have run (a collective's members once
// each is ready). ran < node count means the rest wait on each other: a hang.
struct HbProgress {
  std::vector<uint32_t> pending;  // by node: predecessors not run
  std::vector<uint32_t> arrived;  // by instance: members ready
  std::vector<char> ran;          // by node
  size_t ran_count = 0;
};

class HappensBefore {
 public:
  // `facts`, when given, supplies each op's stream, events and collective role (a caller building
  // several graphs of one job reads each op's attributes once); else they are read here.
  explicit HappensBefore(const Job& job, OpFactsCache* facts = nullptr);

  const Job& job() const { return job_; }
  const std::vector<HbNode>& nodes() const { return nodes_; }
  const std::vector<CollectiveInstance>& instances() const { return instances_; }
  const std::vector<HbRank>& ranks() const { return ranks_; }
  const std::vector<LostDependency>& lostDependencies() const { return lost_; }
  const std::vector<UnmatchedCollective>& unmatched() const { return unmatched_; }
  // Sends and receives with no partner on the other rank's channel (the verifier names them):
  // they run alone here, and the hang check reports each.
  const std::vector<uint32_t>& unmatchedP2P() const { return unmatched_p2p_; }
  size_t edgeCount() const { return succ_.size(); }
  // Successors of a node and the kind of each edge.
  struct Edges {
    const uint32_t* to;
    const HbEdge* kind;
    size_t size;
  };
  Edges successors(uint32_t node) const {
    return {succ_.data() + offsets_[node], succ_kind_.data() + offsets_[node], size_t(offsets_[node + 1] - offsets_[node])};
  }
  // "rank 0 stream 'comm' c_allreduce_sum ring 1 #0 (/programs/0/blocks/0/ops/3)", for messages.
  std::string describe(uint32_t node) const;

  // Kahn's algorithm. `start(first, count)` gets the nodes that start together: one node, or the
  // members of a collective instance (a contiguous list); then `reach(from, to)` is called for
  // every edge out of each of them, before `to` can start.
  template <typename Start, typename Reach>
  HbProgress walk(Start start, Reach reach) const;

 private:
  // `to` is the node being built: edges arrive sorted by target, so only their sources and kinds
  // are kept (and each target's count), 5 bytes an edge until buildCsr.
  void addEdge(uint32_t from, uint32_t to, HbEdge kind) {
    // Members of one point-to-point group are issued together: none waits for another.
    if (from != kNoNode && from != to && (group_first_ == kNoNode || from < group_first_)) {
      edge_from_.push_back(from);
      edge_kind_.push_back(kind);
      ++in_degree_[to];
    }
  }
  void buildProgram(const Program& p, uint32_t rank_index, OpFactsCache& facts);
  void pairPointToPoint(OpFactsCache& facts);
  void buildCsr();

  const Job& job_;
  std::vector<HbNode> nodes_;
  std::vector<CollectiveInstance> instances_;
  std::vector<HbRank> ranks_;
  std::vector<LostDependency> lost_;
  std::vector<UnmatchedCollective> unmatched_;
  std::vector<uint32_t> unmatched_p2p_;
  uint32_t group_first_ = kNoNode;  // while building: the first node of the open p2p group
  std::vector<uint32_t> group_of_;  // while building: by node, the first node of its p2p group
  struct CommNode {
    uint32_t node;
    int64_t ring_id;
    CollectiveSig sig;
  };
  std::vector<CommNode> comm_;  // while building a program: its communicating collectives, in order
  std::vector<uint32_t> edge_from_;  // until buildCsr: each edge's source, by target then insertion
  std::vector<HbEdge> edge_kind_;    // beside edge_from_
  std::vector<uint32_t> offsets_, succ_, in_degree_;
  std::vector<HbEdge> succ_kind_;
};

template <typename Start, typename Reach>
HbProgress HappensBefore::walk(Start start, Reach reach) const {
  HbProgress p;
  p.pending = in_degree_;
  p.arrived.assign(instances_.size(), 0);
  p.ran.assign(nodes_.size(), 0);
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < nodes_.size(); ++i)
    if (p.pending[i] == 0) ready.push_back(i);
  auto finish = [&](uint32_t id) {
    p.ran[id] = 1;
    ++p.ran_count;
    Edges out = successors(id);
    for (size_t k = 0; k < out.size; ++k) {
      reach(id, out.to[k]);
      if (--p.pending[out.to[k]] == 0) ready.push_back(out.to[k]);
    }
  };
  while (!ready.empty()) {
    uint32_t id = ready.back();
    ready.pop_back();
    const HbNode& n = nodes_[id];
    if (n.collective == kNoNode) {
      start(&id, size_t(1));
      finish(id);
      continue;
    }
    const CollectiveInstance& inst = instances_[n.collective];
    if (++p.arrived[n.collective] < inst.members.size()) continue;
    start(inst.members.data(), inst.members.size());
    for (uint32_t m : inst.members) finish(m);
  }
  return p;
}

}  // namespace spopt
