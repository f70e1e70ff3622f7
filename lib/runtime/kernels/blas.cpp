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
  // Up to 8 blocks: enough for 2-4 threads to share out with one descheduled, few enough that
  // re-packing the uncut operand per block stays a small cost. The longer side of C is cut.
  constexpr int64_t kMinWork = int64_t(1) << 22, kAlign = 64, kMaxPieces = 8;
  s.by_rows = m > n;
  int64_t side = s.by_rows ? m : n;
  int64_t want = std::min<int64_t>({kMaxPieces, m * n * k / kMinWork, side / kAlign});
  if (want <= 1) return s;
  s.step = ((side + want - 1) / want + kAlign - 1) / kAlign * kAlign;
  s.pieces = (side + s.step - 1) / s.step;
  return s;
}

void blasSetThreads(int n) {
  if (blas().set_threads && n > 0) blas().set_threads(n);
}

}  // namespace spopt::rt
