// parallelFor: every index once, on several threads where the machine has them, and the lowest
// failing index's exception after all calls returned.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/parallel.h"

using namespace spopt;

TEST_CASE("parallelFor calls the body once per index", "[support][parallel]") {
  for (size_t n : {0, 1, 2, 7, 100}) {
    std::vector<std::atomic<int>> calls(n);
    parallelFor(n, [&](size_t i) { ++calls[i]; });
    for (auto& c : calls) CHECK(c == 1);
  }
}

TEST_CASE("parallelFor runs on several threads and rethrows the lowest failing index's exception", "[support][parallel]") {
  std::mutex m;
  std::set<std::thread::id> threads;
  std::atomic<int> finished{0};
  auto body = [&](size_t i) {
    {
      std::lock_guard<std::mutex> lock(m);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // so that other threads take indices too
    ++finished;
    if (i == 5 || i == 3) throw std::runtime_error("index " + std::to_string(i));
  };
  try {
    parallelFor(16, body);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "index 3");
  }
  CHECK(finished == 16);  // the others ran to the end
  if (std::thread::hardware_concurrency() > 1) CHECK(threads.size() > 1);
}

TEST_CASE("parallelFor keeps its helper threads across calls, and a call from inside a call runs too", "[support][parallel]") {
  setThreadLimit(2);
  // A thread's first body marks its thread-local flag: the count of threads never seen before,
  // which a thread started per call would raise by one per call (a new thread, fresh TLS, even
  // where the system reuses its id).
  static std::atomic<int> fresh_threads{0};
  auto body = [](size_t) {
    thread_local bool seen = false;
    if (!seen) seen = true, ++fresh_threads;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  parallelFor(8, body);  // the caller and the kept helper, each seen at most once from here on
  const int after_first = fresh_threads;
  for (int call = 0; call < 10; ++call) parallelFor(8, body);
  CHECK(fresh_threads - after_first <= 1);  // the helper, if it took no index in the first call
  // Nested: the pool is busy with the outer call, so the inner ones start threads of their own.
  std::vector<std::atomic<int>> calls(4 * 5);
  parallelFor(4, [&](size_t i) { parallelFor(5, [&](size_t j) { ++calls[i * 5 + j]; }); });
  for (auto& c : calls) CHECK(c == 1);
  setThreadLimit(0);
}
