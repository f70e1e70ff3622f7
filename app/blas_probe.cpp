#include "blas_probe.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "runtime/kernels/blas.h"

namespace spopt::app {

int printBlasProbe() {
  const rt::Blas& blas = rt::blas();
  std::printf("blas_core %s\n", blas.core.c_str());
  std::printf("blas_threads %d\n", blas.threads);
  for (int n : {256, 512, 1024}) {
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("sgemm_gflops n=%d %.2f\n", n, 2.0 * n * n * double(n) / best / 1e9);
  }
  return 0;
}

}  // namespace spopt::app
