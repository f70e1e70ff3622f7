#pragma once
// The BLAS the replay kernels call, opened on first use rather than linked: OpenBLAS starts its
// thread pool when loaded, and those threads spin on sched_yield for a while, which cost every
// command that never multiplies a matrix (validate, rewrite, diff) a tenth of its CPU time.
#include <cblas.h>

#include <string>

namespace spopt::rt {

struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  std::string core = "unknown";  // OpenBLAS's kernel set, for benchmark logs
  int threads = 0;               // OpenBLAS's thread count (0 when not OpenBLAS)
};

// Opens the library found at configure time; throws std::runtime_error when it cannot.
const Blas& blas();

}  // namespace spopt::rt
