// sp-opt check BEFORE AFTER: replay both jobs on the same inputs and compare, per rank, every var
// both fetch or keep persistable. Exit 0 all within tolerance, 1 with a table of offenders.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "backends.h"
#include "command.h"
#include "io/atomic_file.h"
#include "job_checks.h"
#include "load_job.h"
#include "runtime/executor.h"
#include "runtime/half.h"
#include "runtime/report.h"
#include "runtime/serial_check.h"

namespace spopt::app::cmd_check {
namespace {

struct Options {
  std::string before, after, backend = "local", backend_after, inputs;
  uint64_t seed = 0;
  std::optional<double> rtol, atol;  // unset: rt::defaultTolerance by the var's dtype
  double timeout_s = 60;
  std::string link, memory_limit;
  bool single_stream = false;
  int64_t dynamic_dim = 1;
  bool serial = false;
  std::string loss_reduce = "sum";
};

std::string rankSet(const std::vector<int64_t>& r) {
  std::string s = "{";
  for (size_t i = 0; i < r.size(); ++i) s += (i ? "," : "") + std::to_string(r[i]);
  return s + "}";
}

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string cell(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  return fmt("%.7g", v.get<double>());
}

// --serial: BEFORE is the serial job, replayed on its one rank by this (the reporting) process;
// AFTER runs on every rank and sends its fetched and persistable vars back for the gathering.
int checkSerial(const Options& o, rt::Backend& backend, const Job& serial, const Job& dist, const std::vector<int64_t>& ranks,
                const rt::ExecOptions& eo, const rt::Tolerance& tol) {
  if (o.loss_reduce != "sum" && o.loss_reduce != "mean")
    throw InputError("--loss-reduce", "", "must be sum or mean, not \"" + o.loss_reduce + "\"");
  rt::checkSerialJob(serial);  // before the distributed job runs
  std::map<int64_t, std::string> dist_kept = backend.run(ranks, [&](int64_t rank, rt::CommFactory& comms) {
    return rt::encodeKept(comms.execute(dist, rank, eo));
  });
  if (!backend.reports()) return backend.agreeOnExit(kExitOk);
  auto local = makeBackend("local", rt::BackendOptions{eo.timeout, {}});
  rt::RankRun serial_run;
  local->run({serial.programs[0]->rank}, [&](int64_t rank, rt::CommFactory& comms) {
    serial_run = comms.execute(serial, rank, eo);
    return std::string();
  });
  rt::SerialComparison c = rt::compareWithSerial(serial, serial_run, dist, dist_kept, tol,
                                                 o.loss_reduce == "mean" ? rt::LossReduce::Mean : rt::LossReduce::Sum, o.after);
  size_t bad = 0;
  double worst_rel = 0, worst_abs = 0;
  std::string table;
  for (const auto& r : c.rows) {
    if (r.contains("rel")) {
      worst_rel = std::max(worst_rel, r["rel"].get<double>());
      worst_abs = std::max(worst_abs, r["max_abs"].get<double>());
    }
    if (r["ok"].get<bool>()) continue;
    ++bad;
    table += r["name"].get<std::string>() + "\t" + r["problem"].get<std::string>();
    if (r.contains("rel")) table += "\t" + cell(r["max_abs"]) + "\t" + cell(r["rel"]);
    if (r.contains("first"))
      table += "\t[" + std::to_string(r["first"]["index"].get<int64_t>()) + "] serial " + cell(r["first"]["before"]) +
               " distributed " + cell(r["first"]["after"]);
    table += "\n";
  }
  std::string summary = "loss " + fmt("%.9g", c.loss_dist) + " (serial " + fmt("%.9g", c.loss_serial) + "; " + o.loss_reduce +
                        " over " + std::to_string(c.loss_shards) + " input shard" + (c.loss_shards == 1 ? "" : "s") + "), " +
                        std::to_string(c.parameters) + " parameters gathered from " + std::to_string(ranks.size()) +
                        " ranks, rtol " + fmt("%g", tol.rtol) + " atol " + fmt("%g", tol.atol) + ", largest rel " +
                        fmt("%.3g", worst_rel) + " abs " + fmt("%.3g", worst_abs);
  if (bad == 0) {
    std::cout << "check --serial: ok: " << summary << "\n";
    return backend.agreeOnExit(kExitOk);
  }
  writeStdout("var\tproblem\tmax_abs\trel\tfirst offending element\n" + table + "check --serial: FAILED: " +
              std::to_string(bad) + " of " + std::to_string(c.rows.size()) + ": " + summary + "\n");
  return backend.agreeOnExit(kExitDiffers);
}

int runCheck(const Options& o) {
  const auto timeout = std::chrono::milliseconds(int64_t(o.timeout_s * 1000));
  rt::BackendOptions bo{timeout, parseLink(o.link, o.backend)};
  // --backend-after: replay AFTER on another in-process backend than BEFORE (local vs nccl), in a
  // separate run after BEFORE's (also when both names are equal: then it tests this path).
  if (!o.backend_after.empty() && (o.backend == "mpi" || o.backend_after == "mpi"))
    throw InputError("--backend-after", "", "comparing two backends needs both in one process (local, nccl), not mpi");
  auto backend = makeBackend(o.backend, bo);
  std::unique_ptr<rt::Backend> backend_after;
  if (!o.backend_after.empty()) backend_after = makeBackend(o.backend_after, bo);
  try {
    auto before = loadVerifiedJob(o.before);
    auto after = loadVerifiedJob(o.after);
    sizeDynamicDimsForReplay(*before, o.before, o.dynamic_dim, backend->reports());
    sizeDynamicDimsForReplay(*after, o.after, o.dynamic_dim, backend->reports());
    if (!o.serial && before->world_size != after->world_size)
      throw InputError(o.after, "/world_size", "world_size " + std::to_string(after->world_size) + " differs from " +
                                                   o.before + "'s " + std::to_string(before->world_size));
    backend->checkLaunch(o.serial ? *after : *before);
    auto ranks = rt::replayRanks(o.serial ? *after : *before);
    auto after_ranks = rt::replayRanks(*after);
    if (!o.serial && ranks != after_ranks)
      throw InputError(o.after, "/programs", "holds the programs of ranks " + rankSet(after_ranks) + ", " + o.before +
                                                 " those of ranks " + rankSet(ranks));
    for (const auto* job : {before.get(), after.get()}) rt::checkOpsReplayable(*job);
    for (const auto* job : {before.get(), after.get()})
      for (const auto& p : job->programs) rt::checkReplayable(*p);
    // BEFORE's results are kept while AFTER runs: both jobs' peaks count.
    const rt::MemoryNeed need = rt::checkMemoryBudget({before.get(), after.get()}, backend->hostedRanks(ranks), memoryBudget(o.memory_limit, *backend, ranks));
    rt::ExecOptions eo{o.seed, o.inputs, false};
    eo.single_stream = o.single_stream;
    eo.timeout = timeout;
    configureThreads(*backend, ranks);
    reserveHostMemory(*backend, need);
    auto toleranceFor = [&](DType t) {
      rt::Tolerance tol = rt::defaultTolerance(t);
      if (o.rtol) tol.rtol = *o.rtol;
      if (o.atol) tol.atol = *o.atol;
      return tol;
    };
    const rt::Tolerance tol = toleranceFor(DType::Float32);
    std::mutex half_mu;
    std::set<DType> half_defaults;  // half dtypes compared under their own default tolerance
    if (o.serial) return checkSerial(o, *backend, *before, *after, ranks, eo, tol);

    auto compare = [&](const rt::RankRun& b, const rt::RankRun& a) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& [name, tb] : b.kept)
        for (const auto& [name_a, ta] : a.kept)
          if (name_a == name) {
            rows.push_back(rt::compareTensors(name, tb, ta, toleranceFor(tb.dtype())));
            if (rt::isHalfDType(tb.dtype()) && !o.rtol) {
              std::lock_guard lk(half_mu);
              half_defaults.insert(tb.dtype());
            }
          }
      return rows.dump();
    };
    std::map<int64_t, std::string> results;
    if (backend_after) {
      // BEFORE on one backend, AFTER on another (e.g. local vs nccl), both in this process.
      backend_after->checkLaunch(*after);
      std::mutex mu;
      std::map<int64_t, rt::RankRun> runs_b, runs_a;
      auto collect = [&](const Job* job, std::map<int64_t, rt::RankRun>* into) {
        return [&mu, &eo, job, into](int64_t rank, rt::CommFactory& comms) {
          rt::RankRun r = comms.execute(*job, rank, eo);
          std::lock_guard lk(mu);
          into->emplace(rank, std::move(r));
          return std::string();
        };
      };
      backend->run(ranks, collect(before.get(), &runs_b));
      backend_after->run(ranks, collect(after.get(), &runs_a));
      for (int64_t r : ranks) results[r] = compare(runs_b.at(r), runs_a.at(r));
    } else {
      results = backend->run(ranks, [&](int64_t rank, rt::CommFactory& comms) {
        rt::RankRun b = comms.execute(*before, rank, eo);
        rt::RankRun a = comms.execute(*after, rank, eo);
        return compare(b, a);
      });
    }
    if (!backend->reports()) return backend->agreeOnExit(kExitOk);

    size_t compared = 0, bad = 0;
    double worst_rel = 0, worst_abs = 0;
    std::string table;
    for (const auto& [rank, text] : results) {
      auto rows = nlohmann::ordered_json::parse(text);
      if (rows.empty()) std::cerr << "sp-opt: warning: rank " << rank << ": no var is fetched or persistable in both jobs\n";
      for (const auto& r : rows) {
        ++compared;
        if (r.contains("rel")) {
          worst_rel = std::max(worst_rel, r["rel"].get<double>());
          worst_abs = std::max(worst_abs, r["max_abs"].get<double>());
        }
        if (r["ok"].get<bool>()) continue;
        ++bad;
        std::string line = std::to_string(rank) + "\t" + r["name"].get<std::string>() + "\t" + r["problem"].get<std::string>();
        if (r.contains("rel")) {
          line += "\t" + cell(r["max_abs"]) + "\t" + cell(r["rel"]) + "\t" + std::to_string(r["nonfinite_before"].get<int64_t>()) +
                  "/" + std::to_string(r["nonfinite_after"].get<int64_t>());
          if (r.contains("first"))
            line += "\t[" + std::to_string(r["first"]["index"].get<int64_t>()) + "] before " + cell(r["first"]["before"]) +
                    " after " + cell(r["first"]["after"]);
        }
        table += line + "\n";
      }
    }
    std::string summary = std::to_string(compared) + " vars on " + std::to_string(ranks.size()) + " ranks, rtol " +
                          fmt("%g", tol.rtol) + " atol " + fmt("%g", tol.atol);
    for (DType t : half_defaults) summary += " (" + std::string(dtypeName(t)) + " rtol " + fmt("%g", toleranceFor(t).rtol) + ")";
    summary += ", largest rel " + fmt("%.3g", worst_rel) + " abs " + fmt("%.3g", worst_abs);
    if (compared == 0) {  // a check that compared nothing proves nothing
      writeStdout("check: FAILED: " + summary + ": no var is fetched or persistable in both jobs by the same name\n");
      return backend->agreeOnExit(kExitDiffers);
    }
    if (bad == 0) {
      std::cout << "check: ok: " << summary << "\n";
      return backend->agreeOnExit(kExitOk);
    }
    writeStdout("rank\tvar\tproblem\tmax_abs\trel\tnonfinite before/after\tfirst offending element\n" + table +
                "check: FAILED: " + std::to_string(bad) + " of " + summary + "\n");
    return backend->agreeOnExit(kExitDiffers);
  } catch (...) {
    return reportCurrentError(*backend);
  }
}

const Registrar reg{{"check", "Replay a job and its rewrite on the same inputs and compare their outputs",
                     "sp-opt check before.json after.json --rtol 1e-5", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("before", o->before, "The original job (the reference)")->required();
                       sub.add_option("after", o->after, "The rewritten job")->required();
                       sub.add_option("--backend", o->backend, "local (threads), mpi (under mpirun) or nccl (GPUs)")->capture_default_str();
                       sub.add_option("--backend-after", o->backend_after,
                                      "Replay AFTER on this backend instead (e.g. check JOB JOB --backend local --backend-after nccl)");
                       sub.add_option("--seed", o->seed, "Seed of the generated inputs")->capture_default_str();
                       sub.add_option("--inputs", o->inputs, "Folder of VAR.npy files replacing generated inputs");
                       sub.add_option("--rtol", o->rtol, "Tolerance on ||after-before|| / ||before|| (default 1e-5; float16 2^-9, bfloat16 2^-6)");
                       sub.add_option("--atol", o->atol, "Tolerance on max |after-before| (for near-zero vars; default 1e-6)");
                       sub.add_flag("--serial", o->serial,
                                    "BEFORE is the serial job (one rank), AFTER its distributed form: compare the loss and every "
                                    "parameter after the step, AFTER's shards gathered by dist_attr");
                       sub.add_option("--loss-reduce", o->loss_reduce,
                                      "--serial: the model's loss from one rank per input shard: sum (each fetches its share) or mean")
                           ->capture_default_str();
                       addRunOptions(sub, o->timeout_s, o->link, o->single_stream, o->memory_limit, o->dynamic_dim);
                       return [o] { return runCheck(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_check
