#pragma once
// The `local` backend: every rank in this process, a thread per rank, collectives over shared
// memory. Reductions add the members' inputs in group order, so results do not depend on thread
// timing (and match the mpi backend bit for bit).
#include <memory>

#include "runtime/communicator.h"

namespace spopt::rt {

std::unique_ptr<Backend> makeLocalBackend(const BackendOptions& opts);

}  // namespace spopt::rt
