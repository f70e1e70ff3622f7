#include "runtime/cpu_budget.h"

#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "runtime/kernels/blas.h"

namespace spopt::rt {
namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int free = 1;
};

Gate& gate() {
  static Gate g;
  return g;
}

// Unconfigured (tokens 0): no gate, OpenBLAS as it started (unit tests, the nccl host fallback).
CpuBudget& budget() {
  static CpuBudget b{0, 0, 0};
  return b;
}

int usableCores() {
  if (const char* env = std::getenv("SPOPT_CORES"))
    if (int n = std::atoi(env); n > 0) return n;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    if (int n = CPU_COUNT(&set); n > 0) return n;
  return std::max(1, int(std::thread::hardware_concurrency()));
}

}  // namespace

CpuBudget configureCpuBudget(int ranks_in_process, int ranks_on_host) {
  CpuBudget b;
  b.cores = usableCores();
  ranks_in_process = std::max(1, ranks_in_process);
  ranks_on_host = std::max(ranks_in_process, ranks_on_host);
  // This process's share of the machine, then of that share per rank it runs.
  const int share = std::max(1, b.cores * ranks_in_process / ranks_on_host);
  b.blas_threads = std::max(1, share / ranks_in_process);
  b.tokens = share;
  // OpenBLAS runs single-threaded: the kernels split a GEMM over blas_threads themselves
  // (runtime/kernels/parallel.h), handing out blocks to whichever thread is running.
  blasSetThreads(1);
  {
    std::lock_guard lk(gate().mu);
    gate().free = b.tokens;
  }
  budget() = b;
  return b;
}

const CpuBudget& cpuBudget() { return budget(); }


CoreLease::CoreLease(int n) : n_(budget().tokens ? std::clamp(n, 1, budget().tokens) : 0) {
  if (!n_) return;
  Gate& g = gate();
  std::unique_lock lk(g.mu);
  g.cv.wait(lk, [&] { return g.free >= n_; });
  g.free -= n_;
}

CoreLease::~CoreLease() {
  if (!n_) return;
  Gate& g = gate();
  {
    std::lock_guard lk(g.mu);
    g.free += n_;
  }
  g.cv.notify_all();
}

}  // namespace spopt::rt
