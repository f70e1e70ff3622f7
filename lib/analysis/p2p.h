#pragma once
// Point-to-point ops (send_v2 / recv_v2, pd_op.p_send / pd_op.p_recv: ops/collective_ops.cpp)
// independent of their dialect, and how sends pair with receives across the ranks of a job: per
// channel (ring, sending rank, receiving rank), the k-th send pairs with the k-th receive, in
// issue order (blocks in order, ops in order) — NCCL's rule for ncclSend / ncclRecv on one
// communicator.
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/collective_kind.h"
#include "ir/ir.h"

namespace spopt {

struct PointToPoint {
  P2PKind kind = P2PKind::Send;
  int64_t ring_id = -1;  // -1: the attribute is missing or not an integer
  int64_t peer = -1;     // the partner's position in the ring; -1 likewise
  Var* tensor = nullptr; // what is sent (X) or received into (Out); null when the slot is empty
};

// nullopt for ops that are not sends or receives (the catalogue's definition says).
std::optional<PointToPoint> asPointToPoint(const Op& op);
const char* p2pKindName(P2PKind k);  // "send", "recv"

// The rank a point-to-point op of `rank`'s program talks to: the ring's member at position `peer`;
// nullopt when the ring is unknown, `rank` is no member, or peer is outside the ring or is `rank`.
std::optional<int64_t> p2pPartner(const Job& job, int64_t rank, const PointToPoint& p);

// Whether `next`, the op right after `prev` in its block, is issued in one group with it: both
// are sends or receives on the same ring and execution stream. A group is issued at once, as
// NCCL's ncclGroupStart/End issues it, and completes when all its transfers have: so a ring
// exchange (send to the next rank, receive from the previous, adjacent) does not deadlock. Any
// other op in between ends the group; ungrouped sends and receives block until their partner
// takes part (replay on every backend, the hang check and the simulator all follow this rule).
bool sameP2PGroup(const Op& prev, const Op& next);

// One direction of one ring between two ranks, with its sends (on `from`) and receives (on `to`)
// in issue order. Ops whose partner p2pPartner cannot name are in no channel.
struct P2PChannel {
  int64_t ring_id = 0;
  int64_t from = 0, to = 0;
  std::vector<const Op*> sends, recvs;
};
// Every channel of the job, ordered by (ring, from, to).
std::vector<P2PChannel> p2pChannels(const Job& job);

}  // namespace spopt
