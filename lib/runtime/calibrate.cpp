#include "runtime/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/buffer_pool.h"
#include "runtime/cpu_budget.h"
#include "runtime/kernels/blas.h"
#include "support/error.h"

namespace spopt::rt {

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every timed loop repeats its unit of work for at least this long: a rate timed over a
// millisecond says whether the thread happened to be descheduled then, while a one-second replay
// sees the share of the cores it gets on average, as a 20 ms round does.
constexpr double kRoundSeconds = 0.02;

// Runs `work` on `ranks` threads at once, as replay's local backend runs ranks (each pinned to
// its cores as replay pins them); each returns the rate of its timed part (set-up excluded), and
// the slowest counts.
template <typename Work>
double concurrently(int ranks, Work work) {
  std::vector<double> rate(size_t(ranks), 0);
  if (ranks == 1) {
    rate[0] = work();
    return rate[0];
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      pinRankThread(r);
      rate[size_t(r)] = work();
    });
  for (auto& t : threads) t.join();
  return *std::min_element(rate.begin(), rate.end());
}

// Units of `unit` per second, repeating it for kRoundSeconds (at least twice).
template <typename Unit>
double timedRate(double units_per_call, Unit unit) {
  auto t0 = std::chrono::steady_clock::now();
  int64_t calls = 0;
  do {
    unit();
    ++calls;
  } while (calls < 2 || seconds(t0) < kRoundSeconds);
  return units_per_call * double(calls) / seconds(t0);
}

// The middle of three rounds: the machine may be shared, and a single quiet (or busy) moment
// says little about the rate a second-long replay gets.
double median3(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The GEMM rate one rank gets while `ranks` ranks multiply at once.
template <typename T, typename Gemm>
double gemmRate(Gemm gemm, int n, int ranks) {
  std::vector<double> rounds;
  for (int round = 0; round < 3; ++round)
    rounds.push_back(concurrently(ranks, [&] {
      std::vector<T> a(size_t(n) * n, T(0.5)), b(size_t(n) * n, T(0.25)), c(size_t(n) * n);
      return timedRate(2.0 * n * double(n) * n, [&] {
        gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(), n);
      });
    }));
  return median3(rounds);
}

// Bytes read + written per second by an element-wise op as replay runs it: the output is a
// zero-filled buffer from replay's pool (runtime/buffer_pool.h), then the loop reads the input and
// writes the output. Tensors of the size generated jobs replay (a MiB). One untimed call first: a
// step reuses pooled buffers, while the first touch of fresh pages cost 7-19 ms per MiB on the
// loaded development machine (page faults), 50-100x the copy.
double elementwiseBandwidth(int ranks) {
  const size_t n = size_t(256) << 10;  // 1 MiB of floats per buffer and rank
  std::vector<double> rounds;
  for (int round = 0; round < 3; ++round) {
    rounds.push_back(concurrently(ranks, [&] {
      std::vector<float> src(n, 1.0f);
      auto copy = [&] {
        std::shared_ptr<std::byte> out = allocateBuffer(n * sizeof(float), true);
        auto* d = reinterpret_cast<float*>(out.get());
        const float* s = src.data();
        for (size_t i = 0; i < n; ++i) d[i] = s[i] * 1.0001f;
        volatile float keep = d[n - 1];  // keeps the loop from being dropped
        (void)keep;
      };
      copy();
      return timedRate(2.0 * double(n) * sizeof(float), copy);
    }));
  }
  return median3(rounds);
}

// How late a thread resumes after a 1 ms timed wait while `ranks` threads wait at once: the
// median of 15 per thread, the slowest thread's. A collective's result wakes a waiting thread and
// the link's sleep ends with one; on a busy machine that resume waited milliseconds for a core.
double wakeLatency(int ranks) {
  const auto nap = std::chrono::milliseconds(1);
  return 1 / concurrently(ranks, [&] {
           std::vector<double> late;
           for (int i = 0; i < 15; ++i) {
             auto t0 = std::chrono::steady_clock::now();
             std::this_thread::sleep_until(t0 + nap);
             late.push_back(std::max(seconds(t0) - 1e-3, 1e-7));
           }
           std::sort(late.begin(), late.end());
           return 1 / late[late.size() / 2];  // as a rate: the slowest thread counts
         });
}

}  // namespace

HostMeasurement measureHost(int ranks) {
  const Blas& blas = rt::blas();
  HostMeasurement m;
  m.ranks = std::max(ranks, 1);
  // The GEMMs get the BLAS threads replay gives each rank (cpu_budget.h): at OpenBLAS's default
  // width every rank thread would fan out over every core, and on a 2-core machine two ranks then
  // measured 4-20x below what replay gets.
  configureCpuBudget(m.ranks, m.ranks);
  for (int n : {32, 64, 128, 256, 512}) m.sgemm_curve.push_back({double(n), gemmRate<float>(blas.sgemm, n, m.ranks)});
  m.sgemm_flops = m.sgemm_curve.back().second;
  m.dgemm_flops = gemmRate<double>(blas.dgemm, 256, m.ranks);
  m.copy_bw = elementwiseBandwidth(m.ranks);
  // Replay's executor looks up the kernel, allocates outputs and checks shapes for every op:
  // a few microseconds that no bandwidth term covers (docs/analyze.md).
  m.op_overhead_s = 3e-6;
  m.wake_s = wakeLatency(m.ranks);
  m.cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return m;
}

std::string hostMeasurementJson(const HostMeasurement& h) {
  std::string curve;
  for (const auto& point : h.sgemm_curve)
    curve += (curve.empty() ? "\"" : ", \"") + std::to_string(int(point.first)) + "\": " + std::to_string(int64_t(point.second / 1e6));
  char rest[256];
  std::snprintf(rest, sizeof rest,
                "\"dgemm_flops\": %.4g, \"copy_bw\": %.4g, \"op_overhead_s\": %.3g, \"wake_s\": %.3g, \"cores\": %d, \"ranks\": %d}",
                h.dgemm_flops, h.copy_bw, h.op_overhead_s, h.wake_s, h.cores, h.ranks);
  return "{\"sgemm_mflops_by_n\": {" + curve + "}, " + rest;
}

HostMeasurement hostFigures(int ranks) {
  const char* path = std::getenv("SPOPT_HOST_CALIBRATION");
  if (!path || !*path) return measureHost(ranks);
  auto bad = [&](const std::string& why) -> InputError { return InputError(path, "", "SPOPT_HOST_CALIBRATION: " + why); };
  std::ifstream in(path);
  if (!in) throw bad("cannot read the file");
  std::stringstream text;
  text << in.rdbuf();
  HostMeasurement m;
  try {
    auto j = nlohmann::json::parse(text.str());
    for (const auto& [n, mflops] : j.at("sgemm_mflops_by_n").items()) m.sgemm_curve.push_back({std::stod(n), mflops.get<double>() * 1e6});
    std::sort(m.sgemm_curve.begin(), m.sgemm_curve.end());
    if (m.sgemm_curve.empty()) throw bad("sgemm_mflops_by_n is empty");
    m.sgemm_flops = m.sgemm_curve.back().second;
    m.dgemm_flops = j.at("dgemm_flops").get<double>();
    m.copy_bw = j.at("copy_bw").get<double>();
    m.op_overhead_s = j.at("op_overhead_s").get<double>();
    m.wake_s = j.value("wake_s", 0.0);  // files from before it was measured
    m.cores = j.at("cores").get<int>();
    m.ranks = j.at("ranks").get<int>();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw bad(std::string("not the JSON line `sp-opt analyze --calibrate` prints: ") + e.what());
  }
  if (m.ranks != std::max(ranks, 1))
    throw bad("measured with " + std::to_string(m.ranks) + " rank(s); this job runs " + std::to_string(ranks) +
              " (--calibrate-ranks " + std::to_string(ranks) + ")");
  return m;
}

}  // namespace spopt::rt
