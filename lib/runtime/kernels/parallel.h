#pragma once
// Work sharing for the replay kernels: fn(i) for i in [0, n) on the calling thread and up to
// width - 1 helper threads of one process-wide pool. Items are claimed one at a time, so a helper
// that the OS does not schedule (a loaded machine) only costs the items it took; the caller never
// waits for a helper that has not started one. OpenBLAS's own threads split each GEMM statically
// in two and spin on sched_yield between calls: on 2 shared cores one descheduled thread stalled
// every GEMM, and 32 small attention GEMMs per op each paid the hand-off (issue 27).
#include <algorithm>
#include <cstdint>
#include <functional>

namespace spopt::rt {

void parallelFor(int64_t n, int width, const std::function<void(int64_t)>& fn);

// How many threads one GEMM may use: the CPU budget's per-GEMM share once configured (OpenBLAS
// itself then runs single-threaded, runtime/cpu_budget.h), else 0: no budget, OpenBLAS threads as
// it started (unit tests, SPOPT_CPU_BUDGET=off).
int gemmWidth();

// fn(begin, end) over [0, n) in fixed ranges of `grain` items, on a GEMM's threads when there is
// more than one range. The ranges depend on n and grain alone, so work whose items are
// independent gives the same result on any number of threads.
template <typename F>
void parallelRanges(int64_t n, int64_t grain, F fn) {
  const int64_t ranges = (n + grain - 1) / grain;
  parallelFor(ranges, ranges > 1 ? gemmWidth() : 1, [&](int64_t r) { fn(r * grain, std::min(n, (r + 1) * grain)); });
}

}  // namespace spopt::rt
