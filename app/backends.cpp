#include "backends.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <CLI/CLI.hpp>

#include "analysis/machine_model.h"
#include "runtime/buffer_pool.h"
#include "runtime/cpu_budget.h"
#include "runtime/local_backend.h"
#include "support/error.h"
#ifdef SPOPT_HAVE_MPI
#include "runtime/mpi/mpi_backend.h"
#endif
#ifdef SPOPT_HAVE_NCCL
#include "runtime/nccl/nccl_backend.h"
#else
#include <unistd.h>

#include <filesystem>

#include "command.h"
#endif

namespace spopt::app {

std::unique_ptr<rt::Backend> makeBackend(const std::string& name, const rt::BackendOptions& opts) {
  if (name == "local") return rt::makeLocalBackend(opts);
  if (name == "mpi") {
#ifdef SPOPT_HAVE_MPI
    return rt::makeMpiBackend(opts);
#else
    throw InputError("--backend", "", "the mpi backend is not built (MPI was not found when sp-opt was configured)");
#endif
  }
  if (name == "nccl") {
#ifdef SPOPT_HAVE_NCCL
    return rt::makeNcclBackend(opts);
#else
    // The GPU backend is a sibling binary (it links cuBLAS and NCCL): run it with our arguments.
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    auto sibling = self.parent_path() / "sp-opt-nccl";
    if (!ec && std::filesystem::exists(sibling)) {
      std::fflush(nullptr);
      execv(sibling.c_str(), originalArgs().data());
      throw InputError("--backend", "", "cannot run " + sibling.string() + ": " + std::strerror(errno));
    }
    throw InputError("--backend", "", "the nccl backend was not built (CUDA/NCCL not found at configure time)");
#endif
  }
  throw InputError("--backend", "", "unknown backend '" + name + "' (local, mpi, nccl)");
}

rt::LinkModel parseLink(const std::string& text, const std::string& backend) {
  LinkSpec spec;
  auto bad = [&](const std::string& why) { throw InputError("--link", "", "'" + text + "': " + why); };
  if (!text.empty() && backend != "local" && backend != "mpi") bad("--link models a network for the local and mpi backends only");
  if (std::string why = parseLinkSpec(text, spec); !why.empty()) bad(why);
  return rt::LinkModel{spec};
}

void configureThreads(rt::Backend& backend, const std::vector<int64_t>& ranks) {
  if (backend.name() == "nccl") return;
  const char* off = std::getenv("SPOPT_CPU_BUDGET");
  int hosted = int(backend.hostedRanks(ranks).size());
  int on_host = backend.ranksOnHost(hosted);  // collective under mpi: every process calls it
  if (off && std::string(off) == "off") return;
  rt::configureCpuBudget(hosted, on_host);
}

void reserveHostMemory(const rt::Backend& backend, const rt::MemoryNeed& need) {
  if (backend.name() == "nccl") return;  // its tensors live on the GPUs
  // A cap: the need is a prediction, and a reservation the run does not use stays resident.
  constexpr int64_t kCap = int64_t(2) << 30;
  rt::reserveBuffers(size_t(std::clamp<int64_t>(need.total, 0, kCap)), rt::cpuBudget().tokens);
}

int reportCurrentError(rt::Backend& backend) {
  auto report = describeError(std::current_exception());
  return backend.reportError(report.text, report.code);
}

}  // namespace spopt::app

namespace spopt::app {

rt::MemoryBudget memoryBudget(const std::string& memory_limit, const rt::Backend& backend, const std::vector<int64_t>& ranks) {
  if (!memory_limit.empty()) {
    auto bytes = rt::parseByteSize(memory_limit);
    if (!bytes) throw InputError("--memory-limit", "", "\"" + memory_limit + "\" is not a byte count (e.g. 8G, 512M, 1000000)");
    return {*bytes, "--memory-limit"};
  }
  if (backend.name() == "nccl") return {};
  auto available = rt::availableMemory();
  if (!available) return {};
  // Under mpi each process hosts one rank and shares the machine with the others on it.
  int hosted = int(backend.hostedRanks(ranks).size());
  int on_host = std::max(backend.ranksOnHost(hosted), 1);
  int64_t share = on_host > hosted ? int64_t(double(*available) * hosted / on_host) : *available;
  return {share, on_host > hosted ? "this process's share of MemAvailable; set --memory-limit" : "MemAvailable; set --memory-limit"};
}

void addRunOptions(CLI::App& sub, double& timeout_s, std::string& link, bool& single_stream, std::string& memory_limit,
                   int64_t& dynamic_dim) {
  sub.add_option("--dynamic-dim", dynamic_dim, "The size a dynamic dimension (-1, e.g. Paddle's batch) is replayed as (default 1)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--memory-limit", memory_limit,
                 "BYTES (8G, 512M, ...): refuse, before allocating, a job whose buffers at their peak exceed it "
                 "(default: the machine's available memory; 0: no limit)");
  sub.add_option("--timeout", timeout_s, "Seconds any rank waits for a collective or another of its streams")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub.add_option("--link", link,
                 "BW_GBPS[,LATENCY_US]: every collective takes at least latency + ring bytes / bandwidth (GB/s) of "
                 "wall time (local, mpi)");
  sub.add_flag("--single-stream", single_stream, "Run every op on the compute stream in program order, ignoring execution_stream");
}

}  // namespace spopt::app
