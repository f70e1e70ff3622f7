// sp-opt replay JOB: run every rank's program and print, per rank, every fetched and persistable
// var (shape, dtype, checksum, min/max/mean) and the time per rank.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>

#include "backends.h"
#include "blas_probe.h"
#include "command.h"
#include "job_checks.h"
#include "load_job.h"
#include "io/atomic_file.h"
#include "io/output_transaction.h"
#include "runtime/executor.h"
#include "runtime/report.h"

namespace spopt::app::cmd_replay {
namespace {

struct Options {
  std::string job, backend = "local", dump, trace, inputs;
  uint64_t seed = 0;
  double timeout_s = 60;
  std::string link, memory_limit;
  bool single_stream = false;
  int64_t dynamic_dim = 1;
  bool blas_probe = false;
};

std::string bytesText(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

int runReplay(const Options& o) {
  if (o.blas_probe) return printBlasProbe();
  if (o.job.empty()) throw InputError("replay", "", "a JOB file is required");
  const auto timeout = std::chrono::milliseconds(int64_t(o.timeout_s * 1000));
  rt::BackendOptions bo{timeout, parseLink(o.link, o.backend)};
  auto backend = makeBackend(o.backend, bo);
  try {
    auto job = loadVerifiedJob(o.job);
    sizeDynamicDimsForReplay(*job, o.job, o.dynamic_dim, backend->reports());
    // --dump and --trace are staged now (an unwritable place fails before the run) and appear
    // together at the end, only if everything succeeded.
    OutputTransaction outputs;
    std::string dump_dir = o.dump.empty() ? "" : outputs.folder(o.dump);
    AtomicFile* trace = o.trace.empty() || !backend->reports() ? nullptr : &outputs.file(o.trace);
    backend->checkLaunch(*job);
    auto ranks = rt::replayRanks(*job);
    rt::checkOpsReplayable(*job);
    for (const auto& p : job->programs) rt::checkReplayable(*p);
    const rt::MemoryNeed need = rt::checkMemoryBudget({job.get()}, backend->hostedRanks(ranks), memoryBudget(o.memory_limit, *backend, ranks));
    rt::ExecOptions eo{o.seed, o.inputs, !o.trace.empty()};
    eo.single_stream = o.single_stream;
    eo.timeout = timeout;
    configureThreads(*backend, ranks);
    reserveHostMemory(*backend, need);

    std::mutex mu;
    std::map<int64_t, rt::RankRun> hosted;  // kept for --dump, written once every rank succeeded
    auto results = backend->run(ranks, [&](int64_t rank, rt::CommFactory& comms) {
      rt::RankRun run = comms.execute(*job, rank, eo);
      nlohmann::ordered_json j{{"rank", rank}, {"seconds", run.seconds}, {"peak_bytes", run.peak_bytes}};
      auto& vars = j["vars"] = nlohmann::ordered_json::array();
      for (const auto& [name, t] : run.kept) vars.push_back(rt::summarize(name, t));
      if (eo.trace) j["events"] = rt::eventsToJson(run.events);
      if (!o.dump.empty()) {
        std::lock_guard lk(mu);
        hosted.emplace(rank, std::move(run));
      }
      return j.dump();
    });
    try {
      for (const auto& [rank, run] : hosted) rt::dumpRank(dump_dir, run);
    } catch (const InputError& e) {
      // Name the user's folder, not the temp one.
      Diagnostic d = e.diagnostic();
      d.file = outputs.displayName(d.file);
      throw InputError(std::move(d));
    }
    if (!backend->reports()) {
      outputs.commit();
      return kExitOk;
    }

    std::map<int64_t, nlohmann::ordered_json> by_rank, events;
    for (const auto& [rank, text] : results) by_rank[rank] = nlohmann::ordered_json::parse(text);
    std::string out = "replay " + o.job + ": " + std::to_string(ranks.size()) + " ranks, backend " + backend->name() +
                      ", seed " + std::to_string(o.seed) + "\n";
    for (auto& [rank, j] : by_rank) {
      out += "rank " + std::to_string(rank) + "\n";
      size_t width = 0;
      for (const auto& v : j["vars"]) width = std::max(width, v["name"].get<std::string>().size());
      for (const auto& v : j["vars"]) out += rt::summaryLine(v, width) + "\n";
      if (j.contains("events")) events[rank] = j["events"];
    }
    out += "time\n";
    for (auto& [rank, j] : by_rank) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "  rank %lld  %.3f ms  peak %s\n", static_cast<long long>(rank),
                    j["seconds"].get<double>() * 1e3, bytesText(j["peak_bytes"].get<double>()).c_str());
      out += buf;
    }
    if (trace) trace->write(rt::chromeTrace(events));
    writeStdout(out);
    outputs.commit();  // checks that standard output got it all before the files appear
    return kExitOk;
  } catch (...) {
    return reportCurrentError(*backend);
  }
}

const Registrar reg{{"replay", "Run every rank's program and summarise its fetched and persistable vars",
                     "sp-opt replay testdata/jobs/hand_tp2_legacy.json --dump out/", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("job", o->job, "Job file");
                       sub.add_option("--backend", o->backend, "local (threads), mpi (under mpirun) or nccl (GPUs)")->capture_default_str();
                       sub.add_option("--seed", o->seed, "Seed of the generated inputs")->capture_default_str();
                       sub.add_option("--inputs", o->inputs, "Folder of VAR.npy files replacing generated inputs");
                       sub.add_option("--dump", o->dump, "Write DIR/rankR/VAR.npy for every reported var");
                       sub.add_option("--trace", o->trace, "Write a Chrome trace-event JSON (Perfetto, chrome://tracing)");
                       addRunOptions(sub, o->timeout_s, o->link, o->single_stream, o->memory_limit, o->dynamic_dim);
                       sub.add_flag("--blas-probe", o->blas_probe, "Print the OpenBLAS core and its sgemm GFLOP/s, then exit");
                       return [o] { return runReplay(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_replay
