#pragma once
// Work spread over the machine's cores: the loader's programs (io/loader.cpp), the passes' and the
// verifier's per-program work run on threads, one index at a time each. The helper threads are
// kept for the process's life and reused by every call (support/parallel.cpp says why).
#include <cstddef>

#include <absl/functional/function_ref.h>

namespace spopt {

// The most threads parallel work starts (the caller's included): the machine's cores
// (std::thread::hardware_concurrency) unless set; sp-opt --threads sets it.
size_t threadLimit();
void setThreadLimit(size_t n);  // 0: the machine's cores again

// Calls body(i) once for every i in [0, n), on up to threadLimit() threads
// (the caller's among them; no thread when n <= 1), taking indices in order. After every call has
// returned, rethrows the exception of the lowest index that threw, if any.
void parallelFor(size_t n, absl::FunctionRef<void(size_t)> body);

}  // namespace spopt
