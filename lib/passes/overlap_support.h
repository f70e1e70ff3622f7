#pragma once
// What the three parts of overlap-collectives share: the regions it reorders, the list scheduler
// (overlap_schedule.cpp) and the comm-stream assignment (overlap_streams.cpp). The pass itself
// (overlap_collectives.cpp) splits matmul grads (matmul_grad_split.h), schedules, checks the ring
// orders across ranks and the memory cap, and reports.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/collectives.h"
#include "analysis/simulate.h"
#include "ir/ir.h"
#include "ops/buffer_views.h"
#include "passes/refusal.h"

namespace spopt {

// The stream a ring's collectives go on: "comm_ring_<ring_id>" (one stream per ring, so a
// communicator's operations stay serialised in issue order).
std::string commStreamName(int64_t ring_id);
// The op as a collective that moves data (c_identity does not) on a comm stream (a kernel
// all-reduce stays with its compute), else nullopt; read from `facts` when given.
std::optional<Collective> commCollective(const Op& op, OpFactsCache* facts = nullptr);
// commCollective(op, facts)'s ring.
std::optional<int64_t> commRing(const Op& op, OpFactsCache* facts);

// Which ops the pass may reorder: the backward's; the backward's and the optimizer's (an update can
// then run as soon as its gradient is final, filling a collective's flight time, as PyTorch's
// optimizer-in-backward does); or every op.
enum class RegionPhases { Backward, BackwardOptimize, All };
// "backward", "backward+optimize", "all"; nullopt for any other name.
std::optional<RegionPhases> regionPhasesNamed(std::string_view name);

// Maximal runs of ops of the entry block that the pass may reorder (ops of `phases`), each in
// program order. An op with a sub-block (control flow, whose body reads vars the def-use lists do
// not show on the op) ends a run and is never moved.
// `facts`, when given, supplies each op's phase (read once per op for the whole pass).
std::vector<std::vector<Op*>> scheduleRegions(Block& entry, RegionPhases phases, OpFactsCache* facts = nullptr);

// Puts `order` (a permutation of `region`, which is contiguous in its block in this order) in place
// of `region`. Splices only the ops between the first and the last place the two differ; ids and
// def-use unchanged.
void applyOrder(const std::vector<Op*>& region, const std::vector<Op*>& order);

// Puts every communicating collective of `regions` (regions of one block, whose views `aliases`
// lists) on its ring's comm stream. Cross-stream data
// dependencies are implicit (format.md); for an in-place collective (it writes a var it reads, as
// Paddle's all-reduce of a parameter gradient does) the last earlier reader of that var on another
// stream also records an event the collective waits for, so the overwrite waits on the read even
// where only true dependencies are tracked. Returns {collectives moved to a comm stream, events
// added}. Call after the schedule is applied (uses positions). `facts`, when given, supplies each
// op's ring and forgets the ops whose dist_attr this changes.
std::pair<size_t, size_t> assignCommStreams(Job& job, const std::vector<std::vector<Op*>>& regions, const BufferAliases& aliases,
                                            OpFactsCache* facts);

struct ScheduleOptions {
  int64_t max_in_flight = 1;  // collectives of one ring issued and not finished, at most
  // An op may be scheduled only while its anchor is below the lowest unscheduled position + window:
  // bounds how far ops move (and the memory they keep alive). 0: keep the order. An op's anchor is
  // its original position; an optimizer op's is that of its latest input's writer (an update may
  // run as soon as what it reads is final, however far below the optimizer section sits; moving it
  // up only shortens what it keeps alive).
  size_t window = 1u << 30;
  // Views of one buffer (coalesce_tensor's): a write of a view orders like a write of the buffer.
  const BufferAliases* aliases = nullptr;
  OpFactsCache* facts = nullptr;  // each op's phase, when given (else read from its attrs)
  // A ready collective may go before its ring's earlier ones while they wait for their inputs
  // (overlap_ring_queue.h); else each ring keeps its program order.
  bool ring_reorder = false;
};

// Why a collective's result was waited for (the compute stream idled on it).
enum class Limit { None, NoIndependentCompute, RingOrder, MaxInFlight, Window, MemoryCap };
// "hidden", "no-independent-compute", "ring-order", "max-in-flight", "window", "memory-cap"
const char* limitCode(Limit l);

struct CollectiveOutcome {
  Op* op = nullptr;
  size_t region_pos = 0;   // its index in the region (original order)
  double cost_s = 0;       // its time on the wire (cost model)
  double exposed_s = 0;    // the compute stream waiting on its result, in the schedule's simulation
  double ring_wait_s = 0;  // how much later it started than its inputs (its ring's previous collective aside) allowed
  Limit limit = Limit::None;
};

// The options an exposure's reason quotes.
struct ExposureLimits {
  int64_t max_in_flight = 0;
  double memory_cap = 0;
  int64_t window = 0;
};
// Why collective `c` (c.limit != None) is left exposed: limitCode's code and, when `explaining`,
// "ring 0: 98.3 us of its 98.3 us exposed: <the limit in words>" (overlap_explain.cpp).
Refusal exposedRefusal(const CollectiveOutcome& c, const ExposureLimits& limits, bool explaining);

struct RegionSchedule {
  std::vector<Op*> order;
  std::vector<CollectiveOutcome> collectives;  // in issue order
  double before_s = 0, after_s = 0;            // the region's simulated time, original order and new
  bool changed = false;
  bool ring_order_changed = false;  // some ring's collectives are issued in another relative order
};

// Top-down list scheduling of one region on one rank against per-op costs (seconds; `cost[i]` of
// `region[i]`; empty: each op's OpFactsCache::cost from opts.facts): compute ops run one at a time on the compute stream, each ring's collectives on
// its own stream. Dependencies: true, anti and output dependencies through vars (in-place ops
// included), and a chain through each ring's collectives (never reordered relative to each other),
// unless opts.ring_reorder (then overlap_ring_queue.h decides each ring's order).
// Each step issues every ready collective its ring has room for, then runs the ready compute op
// that is not waiting on a collective, preferring one whose output a collective reads (issue
// collectives as early as their inputs allow), then the longest cost path to the region's end
// (collectives included), then program order; only when every ready op waits on a collective does it wait,
// for the earliest.
// O((n + edges) log n).
RegionSchedule scheduleRegion(const std::vector<Op*>& region, const std::vector<double>& cost, const ScheduleOptions& opts);

}  // namespace spopt
