#pragma once
// The nccl backend under mpirun (built when MPI is found): one process per GPU, the process with
// node-local rank L on device L. Process orchestration, failure handling and result gathering are
// the mpi backend's (runtime/mpi/mpi_backend.h); each ring's NCCL unique id is created by its
// first member and broadcast over MPI_COMM_WORLD (the nccl-tests model), and collective headers
// are compared with an MPI all-gather on a per-ring MPI communicator.
#include <memory>

#include "runtime/communicator.h"

namespace spopt::rt {

std::unique_ptr<Backend> makeNcclMpiBackend(const BackendOptions& opts, int devices);

}  // namespace spopt::rt
