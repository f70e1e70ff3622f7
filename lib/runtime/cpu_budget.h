#pragma once
// One thread budget for the machine: the replay's compute never asks for more cores than there are.
//
// Ranks run as threads (local backend) or processes (mpi), each with a thread per execution stream,
// and each GEMM may fan out to blas_threads = cores / (ranks this host runs at once) threads: the
// kernels' own pool (runtime/kernels/parallel.h) with OpenBLAS single-threaded under it. A process-wide gate hands out
// cores as tokens: a kernel holds one token while it runs, a GEMM (or a trait::Threaded kernel) as many
// as its BLAS threads.
// Collectives hold none (they wait on other ranks; holding a core across a wait could deadlock).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace spopt::rt {

struct CpuBudget {
  int cores = 1;          // usable by this process (its affinity mask, shared by `ranks_on_host`)
  int blas_threads = 1;   // per GEMM (the kernels' split; OpenBLAS itself is set to 1)
  int tokens = 1;         // kernels running at once in this process
  int ranks = 1;          // ranks this process runs at once
};

// Sets OpenBLAS's thread count and the gate for a run of `ranks_in_process` ranks in this process
// out of `ranks_on_host` on this machine (the mpi backend: 1 of the local process count).
// SPOPT_CORES overrides the core count (benchmarks, tests). Returns what it chose.
CpuBudget configureCpuBudget(int ranks_in_process, int ranks_on_host);
const CpuBudget& cpuBudget();


// Several ranks in one process (the local backend), each with cores of its own (ranks x
// blas_threads <= the cores of the process's affinity mask): pins the calling rank thread to the
// `blas_threads` cores of rank position `index`, as each rank of a GPU job has a device of its own.
// Unpinned, the OS put two rank threads on one core now and then (a collective's wake-up places the
// woken thread beside its waker): on 2 cores, 2 ranks replayed GEMMs 4-19% slower per FLOP than 1
// rank in 4 of 10 runs, pinned in 1 of 10 (by 1.5%). Returns whether it pinned (false: one rank,
// ranks sharing cores, the budget off, or the mask unreadable).
bool pinRankThread(int index);
// Gives the calling thread the process's whole affinity mask back: a thread a pinned rank thread
// started that is not that rank's compute (its communication streams, the kernels' pool helpers).
void unpinThread();

// What the scheduler granted a communication thread (favourCommunicationThread).
struct CommThreadFavour {
  bool higher_priority = false;  // nice lowered by kCommNiceBoost: needs CAP_SYS_NICE or RLIMIT_NICE
  bool short_slice = false;      // a time slice of kCommSliceNs: Linux 6.12 and later, no privilege
};
inline constexpr int kCommNiceBoost = 10;
inline constexpr uint64_t kCommSliceNs = 100'000;

// For a replay thread that runs only communication (collectives, sends, receives): such a thread
// stands for what a GPU runs beside its compute (NCCL's kernels, a copy engine), so when its link
// time ends it must get a core at once, not after a compute thread's time slice, or the overlap
// the schedule planned is lost to the OS scheduler. Asks for a higher priority (refused without
// the privilege, harmlessly) and a short slice, which makes the kernel's scheduler (EEVDF) let the
// thread preempt a running compute thread when it wakes. The thread spends most of its time
// asleep in the emulated link, so what it takes from the compute threads is what it works.
CommThreadFavour favourCommunicationThread();

// Holds `n` tokens of the gate for its lifetime (n is clamped to the gate's size).
class CoreLease {
 public:
  explicit CoreLease(int n);
  ~CoreLease();
  CoreLease(const CoreLease&) = delete;
  CoreLease& operator=(const CoreLease&) = delete;

 private:
  int n_;
};

}  // namespace spopt::rt
