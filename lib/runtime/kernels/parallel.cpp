#include "runtime/kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/cpu_budget.h"

namespace spopt::rt {
namespace {

// One parallelFor call. Shared with the helpers that joined it, so one still looking at `next`
// after the caller returned holds it alive.
struct Job {
  const std::function<void(int64_t)>* fn = nullptr;
  int64_t n = 0;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<int> helpers_left{0};  // helper slots not yet taken
  std::mutex mu;
  std::condition_variable finished;
  std::exception_ptr error;

  // Claims items until none is left; true when this call finished the last one.
  void work() {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard lk(mu);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
        std::lock_guard lk(mu);
        finished.notify_all();
      }
    }
  }
};

class Pool {
 public:
  // Grows to `helpers` threads; they live for the process (detached, idle on a condition variable).
  void ensure(int helpers) {
    std::lock_guard lk(mu_);
    while (started_ < helpers) {
      std::thread([this] { loop(); }).detach();
      ++started_;
    }
  }
  void post(const std::shared_ptr<Job>& job, int helpers) {
    {
      std::lock_guard lk(mu_);
      queue_.push_back(job);
    }
    if (helpers == 1) wake_.notify_one();
    else wake_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  int started_ = 0;

  void loop() {
    unpinThread();  // started by whichever rank thread first needed it: it serves every rank
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lk(mu_);
        wake_.wait(lk, [&] { return !queue_.empty(); });
        job = queue_.front();
        // The last helper slot of a job takes it off the queue; a finished job leaves too.
        if (job->helpers_left.fetch_sub(1) <= 1 || job->next.load(std::memory_order_relaxed) >= job->n) queue_.pop_front();
      }
      job->work();
    }
  }
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: helpers may outlive static destruction
  return *p;
}

}  // namespace

void parallelFor(int64_t n, int width, const std::function<void(int64_t)>& fn) {
  int helpers = int(std::min<int64_t>(width, n)) - 1;
  if (helpers <= 0) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->helpers_left = helpers;
  pool().ensure(helpers);
  pool().post(job, helpers);
  job->work();
  {
    std::unique_lock lk(job->mu);
    job->finished.wait(lk, [&] { return job->done.load(std::memory_order_acquire) == n; });
  }
  if (job->error) std::rethrow_exception(job->error);
}

int gemmWidth() {
  const CpuBudget& b = cpuBudget();
  return b.tokens > 0 ? std::max(1, b.blas_threads) : 0;
}

}  // namespace spopt::rt
