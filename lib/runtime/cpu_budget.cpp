#include "runtime/cpu_budget.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

// The process's affinity mask when the budget was configured (before any rank thread pinned
// itself); `known` false until then.
struct ProcessMask {
  cpu_set_t set;
  bool known = false;
};

ProcessMask& processMask() {
  static ProcessMask m;
  return m;
}

int usableCores(const ProcessMask& mask) {
  if (const char* env = std::getenv("SPOPT_CORES"))
    if (int n = std::atoi(env); n > 0) return n;
  if (mask.known)
    if (int n = CPU_COUNT(&mask.set); n > 0) return n;
  return std::max(1, int(std::thread::hardware_concurrency()));
}

// The kernel's struct sched_attr (sched_setattr(2)); glibc 2.36 declares neither the struct nor the
// call. For a fair-class thread, sched_runtime is its time slice (Linux 6.12+; older kernels
// ignore it and read back 0).
struct SchedAttr {
  uint32_t size = sizeof(SchedAttr);
  uint32_t sched_policy = 0;
  uint64_t sched_flags = 0;
  int32_t sched_nice = 0;
  uint32_t sched_priority = 0;
  uint64_t sched_runtime = 0, sched_deadline = 0, sched_period = 0;
  uint32_t sched_util_min = 0, sched_util_max = 0;
};

bool readSchedAttr(SchedAttr& a) { return syscall(SYS_sched_getattr, 0, &a, unsigned(sizeof a), 0u) == 0; }

bool raiseThreadPriority(int by) {
  const auto tid = id_t(syscall(SYS_gettid));
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, tid);
  return errno == 0 && setpriority(PRIO_PROCESS, tid, nice - by) == 0;
}

bool shortenThreadSlice(uint64_t slice_ns) {
  SchedAttr a;
  if (!readSchedAttr(a) || a.sched_policy != SCHED_OTHER) return false;  // SCHED_BATCH/IDLE/RT: as the user set it
  a.size = sizeof a;
  a.sched_flags = 0;
  a.sched_runtime = slice_ns;
  if (syscall(SYS_sched_setattr, 0, &a, 0u) != 0) return false;
  SchedAttr got;
  return readSchedAttr(got) && got.sched_runtime == slice_ns;
}

}  // namespace

CommThreadFavour favourCommunicationThread() {
  CommThreadFavour got;
  got.higher_priority = raiseThreadPriority(kCommNiceBoost);
  got.short_slice = shortenThreadSlice(kCommSliceNs);
  return got;
}

CpuBudget configureCpuBudget(int ranks_in_process, int ranks_on_host) {
  ProcessMask& mask = processMask();
  mask.known = sched_getaffinity(0, sizeof mask.set, &mask.set) == 0;
  CpuBudget b;
  b.cores = usableCores(mask);
  ranks_in_process = std::max(1, ranks_in_process);
  ranks_on_host = std::max(ranks_in_process, ranks_on_host);
  // This process's share of the machine, then of that share per rank it runs.
  const int share = std::max(1, b.cores * ranks_in_process / ranks_on_host);
  b.blas_threads = std::max(1, share / ranks_in_process);
  b.tokens = share;
  b.ranks = ranks_in_process;
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

bool pinRankThread(int index) {
  const CpuBudget& b = budget();
  const ProcessMask& mask = processMask();
  if (!b.tokens || b.ranks < 2 || !mask.known || index < 0 || index >= b.ranks) return false;
  if (b.ranks * b.blas_threads > std::min(b.cores, CPU_COUNT(&mask.set))) return false;  // ranks share cores
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const int first = index * b.blas_threads;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &mask.set)) continue;
    if (seen >= first && seen < first + b.blas_threads) CPU_SET(cpu, &mine);
    ++seen;
  }
  return sched_setaffinity(0, sizeof mine, &mine) == 0;
}

void unpinThread() {
  const ProcessMask& mask = processMask();
  if (mask.known) sched_setaffinity(0, sizeof mask.set, &mask.set);
}


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
