#pragma once
// Picks a replay backend by name; "mpi" and "nccl" exist only when the build found MPI / CUDA+NCCL.
#include <memory>
#include <string>

#include "runtime/communicator.h"

namespace spopt::app {

// Throws InputError for an unknown backend or one this build lacks.
std::unique_ptr<rt::Backend> makeBackend(const std::string& name, const rt::BackendOptions& opts);

// Call from a catch block while `backend` lives: reports the exception being handled and returns
// its exit code. Under mpi only rank 0 prints, and no process may exit before it has.
int reportCurrentError(rt::Backend& backend);

}  // namespace spopt::app
