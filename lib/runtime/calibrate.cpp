#include "runtime/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/kernels/blas.h"

namespace spopt::rt {

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best of a few runs: the machine is shared, the best run is the machine's rate.
template <typename T, typename Gemm>
double gemmRate(Gemm gemm, int n) {
  std::vector<T> a(size_t(n) * n, T(0.5)), b(size_t(n) * n, T(0.25)), c(size_t(n) * n);
  double best = 1e30;
  // Small sizes repeat more: each run is short, and the best of many is the machine's rate.
  int reps = std::max(4, int(2e8 / (2.0 * n * n * double(n))));
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(), n);
    best = std::min(best, seconds(t0));
  }
  return 2.0 * n * double(n) * n / best;
}

// Bytes read + written per second by an element-wise loop over buffers far larger than the
// caches, as replay's element-wise kernels do.
double copyBandwidth() {
  const size_t n = size_t(16) << 20;  // 64 MiB of floats per buffer
  std::vector<float> src(n, 1.0f), dst(n, 0.0f);
  double best = 1e30;
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    float* d = dst.data();
    const float* s = src.data();
    for (size_t i = 0; i < n; ++i) d[i] = s[i] * 1.0001f;
    best = std::min(best, seconds(t0));
    src[rep] = dst[n - 1 - size_t(rep)];  // keeps the loop from being dropped
  }
  return 2.0 * double(n) * sizeof(float) / best;
}

}  // namespace

HostMeasurement measureHost() {
  const Blas& blas = rt::blas();
  HostMeasurement m;
  for (int n : {32, 64, 128, 256, 512}) m.sgemm_curve.push_back({double(n), gemmRate<float>(blas.sgemm, n)});
  m.sgemm_flops = m.sgemm_curve.back().second;
  m.dgemm_flops = gemmRate<double>(blas.dgemm, 384);
  m.copy_bw = copyBandwidth();
  // Replay's executor looks up the kernel, allocates outputs and checks shapes for every op:
  // a few microseconds that no bandwidth term covers (docs/analyze.md).
  m.op_overhead_s = 3e-6;
  m.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return m;
}

}  // namespace spopt::rt
