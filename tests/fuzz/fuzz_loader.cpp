// libFuzzer target over the loader, the verifier and the writer, then replay's planning: any
// input must end in a result or an InputError(s), never a crash, a hang or another exception.
//
// A job the verifier accepts goes on as `sp-opt replay` would: the ranks, the replayability
// checks, every program's buffer liveness and memory profile (checked sizes: a shape near the
// int64 limit must be refused, not wrap), and the memory budget under a small limit. A tiny
// job that fits (one rank, a few ops, under 1 MiB of buffers) is replayed for real on the local
// backend, so the kernels meet the fuzzer's shapes and attrs too.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>

#include "analysis/memory.h"
#include "io/loader.h"
#include "io/writer.h"
#include "runtime/executor.h"
#include "runtime/local_backend.h"
#include "runtime/memory_budget.h"
#include "runtime/report.h"
#include "support/error.h"
#include "verify/verifier.h"

namespace {

constexpr int64_t kBudget = int64_t(64) << 20;       // planning: refuse past 64 MiB
constexpr int64_t kReplayBytes = int64_t(1) << 20;   // replay for real under 1 MiB
constexpr size_t kReplayOps = 64;

void planAndReplay(const spopt::Job& job) {
  auto ranks = spopt::rt::replayRanks(job);
  spopt::rt::checkOpsReplayable(job);
  for (const auto& p : job.programs) spopt::rt::checkReplayable(*p);
  size_t ops = 0;
  for (const auto& p : job.programs) {
    spopt::MemoryProfile m = spopt::profileMemory(*p);
    (void)m;
    spopt::BlockLiveness live = spopt::rt::computeLiveness(*p);
    (void)live;
    for (const auto& b : p->blocks) ops += b->ops.size();
  }
  spopt::rt::checkMemoryBudget({&job}, ranks, {kBudget, "fuzz"});
  if (ranks.size() != 1 || ops > kReplayOps || spopt::rt::memoryNeed({&job}, ranks).total > kReplayBytes) return;
  spopt::rt::BackendOptions bo{std::chrono::milliseconds(2000), {}};
  auto backend = spopt::rt::makeLocalBackend(bo);
  spopt::rt::ExecOptions eo;
  eo.timeout = std::chrono::milliseconds(2000);
  backend->run(ranks, [&](int64_t rank, spopt::rt::CommFactory& comms) {
    (void)comms.execute(job, rank, eo);
    return std::string();
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto job = spopt::loadJobFromText(text, "fuzz.json");
    if (!spopt::verifyJob(*job).empty()) return 0;
    (void)spopt::jobToString(*job);
    planAndReplay(*job);
  } catch (const spopt::InputError&) {
  } catch (const spopt::InputErrors&) {
  }
  return 0;
}
