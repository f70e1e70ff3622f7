#pragma once
// Picks a replay backend by name; "mpi" and "nccl" exist only when the build found MPI / CUDA+NCCL.
#include <memory>
#include <string>

#include "runtime/communicator.h"

namespace spopt::app {

// Throws InputError for an unknown backend or one this build lacks.
std::unique_ptr<rt::Backend> makeBackend(const std::string& name, const rt::BackendOptions& opts);

}  // namespace spopt::app
