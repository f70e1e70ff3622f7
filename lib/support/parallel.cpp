#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace spopt {

namespace {
std::atomic<size_t> g_thread_limit{0};  // 0: the machine's cores
}  // namespace

size_t threadLimit() {
  const size_t set = g_thread_limit.load(std::memory_order_relaxed);
  return set ? set : std::max(1u, std::thread::hardware_concurrency());
}
void setThreadLimit(size_t n) { g_thread_limit.store(n, std::memory_order_relaxed); }

void parallelFor(size_t n, absl::FunctionRef<void(size_t)> body) {
  if (n == 0) return;
  const size_t threads = std::min(n, threadLimit());
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace spopt
