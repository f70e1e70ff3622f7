// sp-opt analyze JOB [AFTER]: what a job costs (bytes on the wire, FLOPs, activation memory) and
// a simulated step timeline; with two jobs, side by side with the changes first.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>

#include "analysis/job_report.h"
#include "analysis/machine_model.h"
#include "command.h"
#include "job_checks.h"
#include "io/loader.h"
#include "io/output_transaction.h"
#include "runtime/calibrate.h"
#include "support/error.h"
#include "views/analyze_views.h"
#include "write_output.h"

namespace spopt::app::cmd_analyze {
namespace {

struct Options {
  std::vector<std::string> jobs;
  std::string preset = "h100-nvlink";
  std::string link;
  ModelOverrides overrides;
  std::string format = "text";
  std::string output = "-";
  std::string trace;
  int64_t rank = -1;
  size_t top = 5;
  bool calibrate = false;
  int64_t calibrate_ranks = 1;
  bool allow_forward_only = false;
  bool no_simulate = false;
  int64_t dynamic_dim = 1;
};

// The host preset is measured with as many rank threads as the job's replay runs. --link and the
// overrides of the bus figures say the same thing twice: one of them.
HardwareModel chooseModel(const Options& o, int ranks) {
  LinkSpec link;
  if (std::string why = parseLinkSpec(o.link, link); !why.empty()) throw InputError("--link", "", "'" + o.link + "': " + why);
  if (link.on() && (o.overrides.bus_bw || o.overrides.latency_s))
    throw InputError("--link", "", "sets the bus bandwidth and latency: give it or --bus-bw / --latency, not both");
  HardwareModel m = machineModel(o.preset, link, ranks, "--preset");
  try {
    applyOverrides(m, o.overrides);
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    size_t colon = msg.find(' ');
    throw InputError(msg.substr(0, colon), "", msg.substr(colon + 1));
  }
  return m;
}

int printCalibration(int ranks) {
  std::printf("%s\n", rt::hostMeasurementJson(rt::measureHost(ranks)).c_str());
  return kExitOk;
}

void requireBackward(const JobReport& r, const Options& o) {
  if (o.allow_forward_only) return;
  for (const RankReport& rr : r.ranks)
    if (rr.activations.has_backward) return;
  throw InputError(r.path, "",
                   "the job has no backward ops (op_role 1): activation memory and the backward phase need one "
                   "(--allow-forward-only reports the rest)");
}

int runAnalyze(const Options& o) {
  if (o.calibrate) return printCalibration(int(o.calibrate_ranks));
  if (o.jobs.empty() || o.jobs.size() > 2) throw InputError("analyze", "", "give one job, or two (BEFORE AFTER)");
  std::vector<std::unique_ptr<Job>> jobs;
  for (const std::string& path : o.jobs) {
    jobs.push_back(loadJob(path));
    sizeDynamicDimsForCosting(*jobs.back(), path, o.dynamic_dim);
  }
  int64_t ranks = 1;
  for (auto& j : jobs) ranks = std::max<int64_t>(ranks, int64_t(j->programs.size()));
  HardwareModel model = chooseModel(o, int(ranks));
  AnalyzeOptions ao;
  ao.simulate = !o.no_simulate;
  std::vector<JobReport> reports;
  for (auto& job : jobs) {
    reports.push_back(analyzeJob(*job, model, ao));
    requireBackward(reports.back(), o);
  }
  AnalyzeViewOptions vo;
  vo.rank = o.rank;
  vo.top = o.top;
  if (o.rank >= 0)
    for (const JobReport& r : reports) {
      bool found = false;
      for (const RankReport& rr : r.ranks) found = found || rr.rank == o.rank;
      if (!found) throw InputError(r.path, "", "--rank " + std::to_string(o.rank) + ": the job has no program for it");
    }
  std::string text;
  bool two = reports.size() == 2;
  if (o.format == "json") text = two ? renderAnalyzeCompareJson(reports[0], reports[1]) : renderAnalyzeJson(reports[0]);
  else if (o.format == "html") {
    std::vector<const JobReport*> ptrs;
    for (const JobReport& r : reports) ptrs.push_back(&r);
    text = renderAnalyzeHtml(ptrs, vo);
  } else text = two ? renderAnalyzeCompareText(reports[0], reports[1], vo) : renderAnalyzeText(reports[0], vo);
  OutputTransaction outputs;  // the trace and the output together, or neither
  if (!o.trace.empty()) {
    if (o.no_simulate) throw InputError("--trace", "", "needs the simulation (drop --no-simulate)");
    outputs.file(o.trace, renderAnalyzeTrace(reports.back()));
  }
  outputs.file(o.output, text);
  outputs.commit();
  for (auto& j : jobs) keepUntilExit(std::move(j));
  return kExitOk;
}

const Registrar reg{{"analyze", "What a job costs: bytes on the wire, FLOPs, activation memory, a simulated step",
                     "sp-opt analyze job.json --preset h100-nvlink --trace step.json", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("jobs", o->jobs, "JOB, or BEFORE AFTER to compare");
                       sub.add_option("--preset", o->preset,
                                      "Hardware model: h100-nvlink (default), h200-nvlink, a100-nvlink, or host "
                                      "(measured on this machine, models replay)");
                       sub.add_option("--flops", o->overrides.flops, "Override the peak 16-bit FLOP/s (other dtypes scale alike)");
                       sub.add_option("--mem-bw", o->overrides.mem_bw, "Override the memory bandwidth, bytes/s");
                       sub.add_option("--bus-bw", o->overrides.bus_bw, "Override the ring bus bandwidth, bytes/s");
                       sub.add_option("--latency", o->overrides.latency_s, "Override the per-collective latency, seconds");
                       sub.add_option("--link", o->link,
                                      "BW_GBPS[,LATENCY_US]: collectives over the link replay --link emulates (sets the bus "
                                      "bandwidth and latency)");
                       sub.add_option("--format", o->format, "text, json (for CI) or html (one self-contained page)")
                           ->check(CLI::IsMember({"text", "json", "html"}));
                       sub.add_option("-o,--output", o->output, "Output file (default stdout)");
                       sub.add_option("--trace", o->trace, "Write the simulated step as a Chrome/Perfetto trace (the last job)");
                       sub.add_option("--rank", o->rank, "The rank to detail (default: the slowest)");
                       sub.add_option("--top", o->top, "Rows of the critical-path list (default 5)");
                       sub.add_flag("--calibrate", o->calibrate, "Measure this machine for --preset host and print the figures");
                       sub.add_option("--calibrate-ranks", o->calibrate_ranks, "--calibrate: rank threads working at once (default 1)")
                           ->check(CLI::Range(int64_t(1), int64_t(256)));
                       sub.add_flag("--allow-forward-only", o->allow_forward_only,
                                    "Analyze a job without backward ops (no activation report)");
                       sub.add_flag("--no-simulate", o->no_simulate, "Skip the timeline (bytes, FLOPs and memory only)");
                       sub.add_option("--dynamic-dim", o->dynamic_dim,
                                      "The size a dynamic dimension (-1, e.g. Paddle's batch) is costed as (default 1)")
                           ->check(CLI::Range(int64_t(1), int64_t(1) << 31));
                       return [o] { return runAnalyze(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_analyze
