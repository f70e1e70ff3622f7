#pragma once
// What the ranks of a job must agree on, beyond each program's own rules: a var that several
// ranks declare sharded is one tensor, split over one mesh. (The process-group table is the job's
// one `process_groups` list, so every rank sees the same one; import builds it from each rank's
// c_comm_init and refuses ranks that disagree, io/paddle/assemble.cpp. A collective issued by a
// rank outside its ring is the verifier's per-op check.)
#include <functional>
#include <string>

#include "ir/ir.h"

namespace spopt {

// Calls `report(pointer, message)` for each sharded var whose process mesh, dims_mapping or
// global shape differs from the first rank (job order) that declares it. Linear in vars.
void checkMeshAgreement(const Job& job, const std::function<void(std::string, std::string)>& report);

}  // namespace spopt
