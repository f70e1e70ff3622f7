#pragma once
// How much a program communicates: its collectives and the bytes they move.
//
// A collective's payload is its input: numel x dtype size on this rank (a kernel all-reduce's is its
// catalogue definition's CostDef::ring_payload). Its ring traffic (bus
// factors applied) is what a ring algorithm puts on this rank's links (NCCL's "bus bandwidth" convention,
// n = group size): all-reduce 2(n-1)/n x payload, reduce-scatter (n-1)/n x payload, all-gather
// (n-1) x payload (the other ranks' chunks), broadcast 1 x payload.
#include <cstdint>
#include <map>
#include <optional>

#include "analysis/collectives.h"
#include "ir/ir.h"

namespace spopt {

// The bytes one collective moves; nullopt when its input has an unknown dim (-1) or is absent.
// The group size comes from the job's process group, else the `nranks` attribute.
std::optional<int64_t> collectiveBytes(const Op& op, const Collective& c, const Job& job, bool bus_factors);

// Both figures are kept: a fusion such as all-reduce + split -> reduce-scatter leaves the payload
// as it was and halves the ring traffic, and a reader wants to see both.
struct CommStats {
  int64_t count = 0;           // communicating collectives (c_identity excluded)
  int64_t payload_bytes = 0;   // summed over collectives of known size
  int64_t ring_bytes = 0;      // the same collectives' ring traffic
  int64_t unknown_size = 0;    // collectives whose size is unknown (in neither sum)
  std::map<CollectiveKind, int64_t> by_kind;

  void add(const Op& op, const Collective& c, const Job& job);
};

CommStats commStats(const Program& p);

}  // namespace spopt
