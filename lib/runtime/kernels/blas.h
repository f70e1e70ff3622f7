#pragma once
// The BLAS the replay kernels call, opened on first use rather than linked: OpenBLAS starts its
// thread pool when loaded, and those threads spin on sched_yield for a while, which cost every
// command that never multiplies a matrix (validate, rewrite, diff) a tenth of its CPU time.
#include <cblas.h>

#include <cstdint>
#include <string>

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

// C = op(A) op(B) + beta C, row-major, through blas() (ta / tb: A / B transposed).
inline void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float beta, float* c, int64_t ldc) {
  blas().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a,
               int(lda), b, int(ldb), beta, c, int(ldc));
}
inline void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb,
                 double beta, double* c, int64_t ldc) {
  blas().dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0, a,
               int(lda), b, int(ldb), beta, c, int(ldc));
}

}  // namespace spopt::rt
