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

// How a GEMM is cut into blocks: row blocks of C of a fixed height (kGemmRowBlock, the last one
// shorter) and column pieces whose width depends on n and k alone, each piece one OpenBLAS call on
// the sub-matrices. OpenBLAS rounds a row differently in the last bits depending on the height of
// the call it is in (and on its own thread count), so cutting by a height that never depends on
// m makes a row of C depend on its row of op(A), op(B) and its offset in its block only: a GEMM
// on rows [i, j) of A, i and j multiples of the block, gives bitwise the rows the whole GEMM gives
// (what decompose-collective-matmul's all-gather form relies on), and a replay's numbers are the
// same on any thread count. `parallel`: enough work to share the pieces over threads (which
// thread runs a piece changes no bit).
constexpr int64_t kGemmRowBlock = 256;
struct GemmSplit {
  int64_t row_pieces = 1, col_step = 0, col_pieces = 1;
  bool parallel = false;
  int64_t pieces() const { return row_pieces * col_pieces; }
};
GemmSplit gemmSplit(int64_t m, int64_t n, int64_t k);

// C = op(A) op(B) + beta C, row-major (ta / tb: A / B transposed). Under a CPU budget (every
// replay) piece by piece (gemmSplit), the pieces shared out over gemmWidth() threads, OpenBLAS
// single-threaded; without one (SPOPT_CPU_BUDGET=off, unit tests that configure none) one call of
// OpenBLAS at its own thread count: its threads hand off and spin per call, so 256-row pieces
// there cost 2x (scripts/bench-replay.sh, budget off), and its numbers depend on its thread
// count anyway.
template <typename T>
void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
              T* c, int64_t ldc) {
  const int width = gemmWidth();
  const GemmSplit s = width > 0 ? gemmSplit(m, n, k) : GemmSplit{};
  if (s.pieces() <= 1) return blasGemmCall(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
  parallelFor(s.pieces(), s.parallel ? width : 1, [&](int64_t i) {
    const int64_t row = i / s.col_pieces * kGemmRowBlock, col = i % s.col_pieces * s.col_step;
    const int64_t rows = std::min(kGemmRowBlock, m - row), cols = std::min(s.col_step, n - col);
    const T* ai = ta ? a + row : a + row * lda;  // rows row.. of op(A)
    const T* bj = tb ? b + col * ldb : b + col;  // columns col.. of op(B)
    blasGemmCall(ta, tb, rows, cols, k, ai, lda, bj, ldb, beta, c + row * ldc + col, ldc);
  });
}

}  // namespace spopt::rt
