#pragma once
// Which ready collective of a ring overlap-collectives' list scheduler (overlap_schedule.cpp) may
// issue next, when ScheduleOptions::ring_reorder lets a collective pass its ring's earlier ones.
//
// A ring issues its collectives in program order (its head: the first one not issued), except
// that while the head waits for its inputs, one later collective whose inputs are ready may go
// first, if the model says the head's inputs cannot be ready before that one would finish: the
// compute stream still has at least that much of the head's unscheduled ancestors to run. The
// link would sit idle otherwise; the head is never delayed (in the model). A regathered
// activation (regather-activations) is ready from backward's start but read late: this issues it
// in the link's idle time a layer earlier, as FSDP's and Megatron-LM's backward prefetch do. At
// most one collective passes each head, so at most one prefetched result waits for its reader
// (what the prefetch costs in memory).
//
// Every rank of a ring must make the same choices (NCCL pairs collectives by issue order): the
// pass checks that each ring's new order is the same permutation on every member
// (checkRingOrders) and schedules again with program order kept where it is not.
#include <cstdint>
#include <queue>
#include <vector>

#include "passes/overlap_graph.h"

namespace spopt {

class RingQueues {
 public:
  RingQueues(const RegionGraph& g, const std::vector<double>& cost, bool reorder);

  // The one ready collective of ring `ring_index` (RegionGraph::ring_index) the ring's order lets
  // go now, before any timing: its head when the head is ready, else the earliest ready one after
  // it, which may pass the head if the timing allows (mayPass), unless one already passed it.
  // `ready[i]`: op i's inputs are all scheduled (a collective in the scheduler's ready list).
  // Every other ready collective of the ring waits its turn, so the scheduler times only this one.
  // Without reorder every ready collective is a head: `c` is then kNone and the caller picks.
  enum class Turn { Head, MayPass, No };
  struct Candidate {
    uint32_t c = kNone;
    Turn turn = Turn::No;
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  Candidate candidate(uint32_t ring_index, const std::vector<uint8_t>& ready);
  bool reorders() const { return reorder_; }
  // Whether collective `c`, whose turn is MayPass, may be issued at `start` (when its ring is free
  // and its inputs are there), `now` being the compute stream's clock. `done[i]`, `finish[i]`:
  // scheduled ops and their end times.
  bool mayPass(uint32_t c, double now, double start, const std::vector<uint8_t>& done, const std::vector<double>& finish);
  // Collective `c`'s inputs are all scheduled (it joined the scheduler's ready list).
  void released(uint32_t c);
  // `c` was issued.
  void issued(uint32_t c);
  // Whether collective `c` was issued before its ring's earlier ones.
  bool passed(uint32_t c) const { return !passed_.empty() && passed_[c]; }

 private:
  struct Ring {
    std::vector<uint32_t> ops;  // program order
    size_t head = 0;
    bool passed = false;  // a collective passed the current head
    // Positions in `ops` of the released collectives, least first; an issued one leaves when it
    // reaches the top (every position before the head is issued, so the least waiting one not
    // issued is the first after the head).
    std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> waiting;
  };
  // A lower bound of when the compute stream can have run head's unscheduled ancestors, from `now`;
  // the search stops once it reaches `enough`.
  double headReadyBound(uint32_t head, double now, double enough, const std::vector<uint8_t>& done, const std::vector<double>& finish);

  const RegionGraph& g_;
  const std::vector<double>& cost_;
  bool reorder_;
  std::vector<Ring> rings_;  // by RegionGraph::ring_index
  std::vector<uint8_t> issued_, passed_;
  std::vector<uint32_t> position_;  // by op: a collective's index in its ring's `ops`
  std::vector<uint32_t> seen_, stack_;
  uint32_t stamp_ = 0;
};

}  // namespace spopt
