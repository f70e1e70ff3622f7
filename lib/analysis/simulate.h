#pragma once
// A discrete-event simulation of one training step on every rank at once.
//
// Each rank has a compute stream ("default") and one stream per other `execution_stream` name.
// Ops of a stream run in program order. An op starts when its stream is free, its inputs' last
// writers have finished (a dependency across streams is an implicit event, as in Paddle's
// standalone executor), the ops recording its `events_to_wait` have finished, and, for a
// collective, when every member rank of its ring has reached it (k-th collective of a ring pairs
// with the k-th on every member). Costs come from cost_model.h. Every op is scheduled once, in
// dependency order (Kahn's algorithm over the job's ops, collectives joined across ranks): linear
// in ops + edges.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/cost_model.h"
#include "analysis/op_facts.h"
#include "ir/op_role.h"
#include "ir/ir.h"

namespace spopt {

inline constexpr size_t kPhaseCount = 6;  // Phase's enumerators

struct SimInterval {
  double start = 0, end = 0;
  const Op* op = nullptr;
  uint32_t position = 0;  // the op's index in its block (for JSON pointers without a scan)
};

struct StreamTimeline {
  std::string name;  // "default" is the compute stream, always first
  std::vector<SimInterval> intervals;  // program order (= execution order on the stream)
};

struct PhaseTimes {
  double compute_s = 0;   // busy time of compute ops
  double comm_s = 0;      // time collectives run (any stream)
  double exposed_s = 0;   // time the compute stream waits on a collective
  double first_start = -1, last_end = 0;  // wall-clock span of the phase's ops (-1: no op)
  double span() const { return first_start < 0 ? 0 : last_end - first_start; }
};

struct RankTimeline {
  int64_t rank = 0;
  std::vector<StreamTimeline> streams;
  double end_s = 0;
  PhaseTimes total;
  std::array<PhaseTimes, kPhaseCount> phases{};
  double overlapPercent() const { return total.comm_s > 0 ? 100.0 * (1 - total.exposed_s / total.comm_s) : 100.0; }
};

struct CriticalItem {
  int64_t rank = 0;
  const Op* op = nullptr;
  double seconds = 0;  // the op's own duration
  double wait_s = 0;   // idle time before it on the path (a collective waiting for its peers)
};

struct StepTimeline {
  std::string model;  // the hardware model's name
  double step_s = 0;  // the last op's end over every rank
  std::vector<RankTimeline> ranks;    // in job order
  std::vector<CriticalItem> critical_path;  // first op to last
  int64_t unpaired_collectives = 0;   // collectives whose peers have no program in the file
  const RankTimeline* slowest() const;
};

// Throws InputError naming an op when the ranks can never all reach a collective (their issue
// orders across rings form a cycle), or when a rank's collective has no partner.
StepTimeline simulateStep(const Job& job, const HardwareModel& model);
// With `timelines` false, only the totals (step_s, each rank's end_s, total and phases) are kept:
// no stream intervals, no critical path. A pass that reads only the totals skips their building.
// A caller that simulates one job more than once (a pass, before and after reordering it) keeps
// one OpFactsCache (op_facts.h), so each op's attributes are read and costed once.
StepTimeline simulateStep(const Job& job, OpFactsCache& facts, bool timelines = true);
// Throws what simulateStep would throw, without timing anything: one walk of the happens-before
// graph (a pass that needs only the proof that its new orders cannot hang).
void checkSchedulable(const Job& job, OpFactsCache& facts);

}  // namespace spopt
