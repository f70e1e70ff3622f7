#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace spopt {

namespace {
std::atomic<size_t> g_thread_limit{0};  // 0: the machine's cores

// Helper threads kept for the process's life. A thread started per call would cost its creation,
// and the allocator gives every new thread state of its own (jemalloc: an arena and a cache), which
// it then faults in from fresh pages, at several microseconds a page on a paravirtualised VM; a
// kept thread reuses what it freed. One call at a time: a call made while the pool is busy (from
// another thread, or from inside a call's work) starts threads of its own, as before the pool.
class HelperPool {
 public:
  // Runs work() on the calling thread and on `helpers` kept threads at once, and returns when
  // every one has returned; false, running nothing, when the pool is busy. work() must not throw.
  bool run(size_t helpers, absl::FunctionRef<void()> work) {
    bool idle = false;  // (an atomic, not a mutex: the caller's own work may call again)
    if (!busy_.compare_exchange_strong(idle, true)) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (; started_ < helpers; ++started_) std::thread([this, id = started_] { serve(id); }).detach();
      work_ = &work;
      wanted_ = helpers;
      pending_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    work_ = nullptr;
    busy_.store(false);
    return true;
  }

 private:
  void serve(size_t id) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (id >= wanted_) continue;  // this call wants fewer helpers
      const absl::FunctionRef<void()>* work = work_;
      lock.unlock();
      (*work)();
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::atomic<bool> busy_{false};  // a call is running
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const absl::FunctionRef<void()>* work_ = nullptr;
  size_t started_ = 0, wanted_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
};

HelperPool& helperPool() {
  static HelperPool* pool = new HelperPool;  // never destroyed: its threads wait until the process exits
  return *pool;
}
}  // namespace

size_t threadLimit() {
  const size_t set = g_thread_limit.load(std::memory_order_relaxed);
  if (set) return set;
  // Read once: glibc reads /sys/devices/system/cpu/online on every call, and every parallelFor asks.
  static const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return cores;
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
  if (threads == 1) {
    worker();
  } else if (!helperPool().run(threads - 1, worker)) {  // busy: threads of this call's own
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads; ++t) helpers.emplace_back(worker);
    worker();
    for (auto& t : helpers) t.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace spopt
