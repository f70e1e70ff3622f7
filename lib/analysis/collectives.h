#pragma once
// What a collective op does, independent of its dialect (legacy c_*, current, or PIR pd_op.*), and the order in
// which a program issues collectives on each ring: the order NCCL pairs them in across ranks.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/collective_kind.h"
#include "ir/ir.h"

namespace spopt {

// CollectiveKind and ReduceOp: ir/collective_kind.h.

struct Collective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int64_t ring_id = 0;    // -1 when the attribute is missing or not an integer
  ReduceOp reduce = ReduceOp::Sum;
  int64_t root = 0;  // broadcast, reduce: the root's position in the ring (collectiveRootAttr)
  Dialect dialect = Dialect::Legacy;  // the op's spelling: slots X/Out, x/out or in0/out0
  std::string_view in_slot, out_slot;
};

// nullopt for ops that are not collectives (the catalogue's definition says: ops/op_def.h).
std::optional<Collective> asCollective(const Op& op);
const char* collectiveKindName(CollectiveKind k);
// c_identity moves no data: it is not paired across ranks.
inline bool communicates(const Collective& c) { return c.kind != CollectiveKind::Identity; }

// Communicating collectives of a program, per ring, in issue order (blocks in order, ops in order).
std::map<int64_t, std::vector<const Op*>> collectivesByRing(const Program& p);

}  // namespace spopt
