#pragma once
// The `nccl` backend: replay on GPUs with NCCL collectives.
//
// One process drives every local GPU (a thread per rank, rank at position i of the job on device
// i), with one NCCL communicator per ring of the job, created with ncclCommInitRank from one
// unique id per ring shared in-process. Under mpirun (when the build has MPI) each process drives
// one GPU (its local rank) and each ring's unique id is broadcast over MPI, as nccl-tests do.
// A rank runs its program with the device executor (device_executor.h).
//
// Before the collective's data moves, its members compare headers (kind, dtype, count, op) on the
// host, so a mismatch is an error naming both ranks, never a hang in NCCL.
#include <memory>
#include <string>

#include "runtime/communicator.h"

namespace spopt::rt {

// Throws InputError("--backend", ...) with "no CUDA device: ..." when no GPU is usable.
std::unique_ptr<Backend> makeNcclBackend(const BackendOptions& opts);

// The CUDA device count, or an InputError with the CUDA error text (cudaGetDeviceCount fails
// with cudaErrorInsufficientDriver on a machine without a GPU driver, leaving the count unset).
int usableDeviceCount();

}  // namespace spopt::rt
