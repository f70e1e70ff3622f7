#pragma once
// Picks a replay backend by name; "mpi" and "nccl" exist only when the build found MPI / CUDA+NCCL.
#include <memory>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/memory_budget.h"

namespace CLI {
class App;
}

namespace spopt::app {

// Throws InputError for an unknown backend or one this build lacks.
std::unique_ptr<rt::Backend> makeBackend(const std::string& name, const rt::BackendOptions& opts);

// --link BW_GBPS[,LATENCY_US] ("" = off). Throws InputError (exit 2) for a malformed value or
// for a backend that does not model links (nccl has real ones).
rt::LinkModel parseLink(const std::string& text, const std::string& backend);

// The thread budget for a run of `ranks` on `backend` (runtime/cpu_budget.h): OpenBLAS threads per
// GEMM and the core gate. Not for nccl (its GEMMs run on GPUs). SPOPT_CPU_BUDGET=off leaves
// OpenBLAS at its full width and no gate (the behaviour before the budget, for benchmarks).
void configureThreads(rt::Backend& backend, const std::vector<int64_t>& ranks);

// Faults in the host memory the run will use (rt::reserveBuffers: up to the ranks' predicted peak,
// capped) before any rank's clock starts, so a replay's time is its kernels' and not the first
// touch of its buffers. Call after configureThreads (it touches on the process's cores).
void reserveHostMemory(const rt::Backend& backend, const rt::MemoryNeed& need);

// The options replay and check share for how ranks run: --timeout, --link, --single-stream,
// --memory-limit.
void addRunOptions(CLI::App& sub, double& timeout_s, std::string& link, bool& single_stream, std::string& memory_limit,
                   int64_t& dynamic_dim);

// The memory budget of this process's ranks (runtime/memory_budget.h): --memory-limit BYTES when
// given ("0": none), else the machine's available memory shared by the ranks running on it (nccl:
// none by default, its buffers live on the GPUs). Throws InputError for a malformed value.
rt::MemoryBudget memoryBudget(const std::string& memory_limit, const rt::Backend& backend, const std::vector<int64_t>& ranks);

// Call from a catch block while `backend` lives: reports the exception being handled and returns
// its exit code. Under mpi only rank 0 prints, and no process may exit before it has.
int reportCurrentError(rt::Backend& backend);

}  // namespace spopt::app
