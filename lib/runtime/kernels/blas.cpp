#include "runtime/kernels/blas.h"

#include <dlfcn.h>

#include <stdexcept>

#ifndef SPOPT_BLAS_SONAME
#define SPOPT_BLAS_SONAME "libopenblas.so.0"
#endif

namespace spopt::rt {
namespace {

Blas open() {
  void* lib = dlopen(SPOPT_BLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw std::runtime_error(std::string("cannot open the BLAS library " SPOPT_BLAS_SONAME ": ") + dlerror());
  Blas b;
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(dlsym(lib, "cblas_sgemm"));
  b.dgemm = reinterpret_cast<decltype(b.dgemm)>(dlsym(lib, "cblas_dgemm"));
  if (!b.sgemm || !b.dgemm) throw std::runtime_error("the BLAS library " SPOPT_BLAS_SONAME " lacks cblas_sgemm or cblas_dgemm");
  // OpenBLAS extensions: absent from other BLAS implementations.
  if (auto core = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename")))
    if (const char* name = core()) b.core = name;
  if (auto threads = reinterpret_cast<int (*)()>(dlsym(lib, "openblas_get_num_threads"))) b.threads = threads();
  b.set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
  return b;  // the library stays open for the process's life
}

}  // namespace

const Blas& blas() {
  static const Blas b = open();
  return b;
}

GemmSplit gemmSplit(int64_t m, int64_t n, int64_t k) {
  GemmSplit s;
  if (m <= 0 || n <= 0 || k <= 0) return s;
  // Row blocks of kGemmRowBlock: measured within 2% of one call (re-packing op(B) per block),
  // where 128 rows cost 6-12% and 64 rows 15-20% (OpenBLAS 0.3, AVX-512, one thread).
  // Column pieces, from n and k alone: up to 4, a multiple of 128 wide, each of a row block's
  // pieces at least 4M multiply-adds, so that a short GEMM still shares out over the threads.
  // Each piece re-packs its row block of op(A): 8 pieces 64 wide cost 2-5% more than 4 pieces 128 wide
  // on a GPT layer's GEMMs (one thread, OpenBLAS Haswell kernels, cold caches).
  constexpr int64_t kMinWork = int64_t(1) << 22, kAlign = 128, kMaxCols = 4;
  s.row_pieces = (m + kGemmRowBlock - 1) / kGemmRowBlock;
  int64_t cols = std::min<int64_t>({kMaxCols, n / kAlign, kGemmRowBlock * n * k / kMinWork});
  if (cols > 1) {
    s.col_step = ((n + cols - 1) / cols + kAlign - 1) / kAlign * kAlign;
    s.col_pieces = (n + s.col_step - 1) / s.col_step;
  } else {
    s.col_step = n;
  }
  s.parallel = m * n * k >= 2 * kMinWork;
  return s;
}

void blasSetThreads(int n) {
  if (blas().set_threads && n > 0) blas().set_threads(n);
}

}  // namespace spopt::rt
