#pragma once
// The BLAS the replay kernels call, opened on first use rather than linked: OpenBLAS starts its
// thread pool when loaded, and those threads spin on sched_yield for a while, which cost every
// command that never multiplies a matrix (validate, rewrite, diff) a tenth of its CPU time.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "runtime/kernels/parallel.h"

namespace spopt::rt {

struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  std::string core = "unknown";  // OpenBLAS's kernel set, for benchmark logs
  int threads = 0;               // OpenBLAS's thread count (0 when not OpenBLAS)
  void (*set_threads)(int) = nullptr;  // openblas_set_num_threads (process-wide), when present
};

// Opens the library found at configure time; throws std::runtime_error when it cannot.
const Blas& blas();

// OpenBLAS's thread count for every later GEMM of the process (no-op for another BLAS). Call it
// while no GEMM runs.
void blasSetThreads(int n);

// One GEMM call, C = op(A) op(B) + beta C, row-major, through blas() (ta / tb: A / B transposed).
inline void blasGemmCall(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                         int64_t ldb, float beta, float* c, int64_t ldc) {
  blas().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a,
               int(lda), b, int(ldb), beta, c, int(ldc));
}
inline void blasGemmCall(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                         int64_t ldb, double beta, double* c, int64_t ldc) {
  blas().dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0, a,
               int(lda), b, int(ldb), beta, c, int(ldc));
}

// How a GEMM is cut into blocks for the threads: `pieces` blocks of `step` rows (by_rows) or
// columns of C, each one single-threaded OpenBLAS call on the sub-matrices. The cut depends on the
// shape alone, never on the thread count, so a replay's numbers are the same on 1, 2 or 4 ranks per
// host and on any core count (OpenBLAS's own threads cut by their count, and its blocks round
// differently in the last bits). Blocks stay large: at least 4M multiply-adds, a multiple of 64.
struct GemmSplit {
  bool by_rows = false;
  int64_t step = 0, pieces = 1;
};
GemmSplit gemmSplit(int64_t m, int64_t n, int64_t k);

// C = op(A) op(B) + beta C, row-major (ta / tb: A / B transposed). Under a CPU budget its blocks
// share out over gemmWidth() threads; without one (unit tests, SPOPT_CPU_BUDGET=off) it is one call
// of OpenBLAS at OpenBLAS's own thread count.
template <typename T>
void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
              T* c, int64_t ldc) {
  const int width = gemmWidth();
  GemmSplit s = width > 0 ? gemmSplit(m, n, k) : GemmSplit{};
  if (s.pieces <= 1) return blasGemmCall(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  parallelFor(s.pieces, width, [&](int64_t i) {
    int64_t lo = i * s.step;
    if (s.by_rows) {  // rows lo.. of C and op(A)
      int64_t rows = std::min(s.step, m - lo);
      blasGemmCall(ta, tb, rows, n, k, ta ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc, ldc);
    } else {  // columns lo.. of C and op(B)
      int64_t cols = std::min(s.step, n - lo);
      blasGemmCall(ta, tb, m, cols, k, a, lda, tb ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
    }
  });
}

}  // namespace spopt::rt
