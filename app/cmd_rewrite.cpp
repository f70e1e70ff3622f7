// sp-opt rewrite IN OUT: load and verify a job (JSON or text), run a pass pipeline over it
// (verifying after each pass), and write the result (JSON, or text for OUT.sptxt / --emit=text).
// Statistics, explanations and --print-after go to stderr so that OUT may be "-" (stdout).
#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <memory>

#include "command.h"
#include "load_job.h"
#include "io/atomic_file.h"
#include "io/loader.h"
#include "io/output_transaction.h"
#include "io/text_writer.h"
#include "io/writer.h"
#include "passes/pass_manager.h"
#include "split_input.h"

namespace spopt::app::cmd_rewrite {
namespace {

struct Options {
  std::string in, out;
  std::string passes{kDefaultPipeline};
  bool stats = false, timing = false, explain = false, print_after_all = false, dry_run = false, split_input_file = false;
  std::string report;
  std::string preset, link;  // every pass of the pipeline that schedules by a machine model
  std::string emit;  // json or text; empty: text when OUT ends in .sptxt
  std::vector<std::string> print_after;
};

size_t countOps(const Job& job) {
  size_t n = 0;
  for (const auto& p : job.programs)
    for (const auto& b : p->blocks) n += b->ops.size();
  return n;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", v);
  return buf;
}

std::string explainLine(const std::string& pass, const ExplainRecord& r) {
  return pass + ": rank " + std::to_string(r.rank) + " block " + std::to_string(r.block_idx) + " op " +
         std::to_string(r.op_index) + " (" + r.op_type + "): " + (r.rewritten ? "rewritten, note [" : "refused [") + r.code +
         "]: " + r.reason;
}

// " bytes" / " ns" after a figure, from the pass's declaration of the statistic ("" for counts).
std::string unitSuffix(const std::string& pass, const std::string& statistic) {
  const PassInfo* info = PassRegistry::builtin().find(pass);
  for (const StatisticSpec& s : info ? info->statistics : std::vector<StatisticSpec>{})
    if (s.name == statistic && s.unit != StatUnit::Count) return std::string(" ") + statUnitName(s.unit);
  return "";
}

// "  PASS: T ms (verify V ms)": the head of a pass's line in --stats and the whole of it in --timing.
std::string timeLine(const PassRun& r) { return "  " + r.text + ": " + ms(r.time_ms) + " (verify " + ms(r.verify_ms) + ")"; }

void printStats(const PipelineResult& res, double load_ms) {
  std::cerr << "pass statistics (load+verify " << ms(load_ms) << "):\n";
  for (const PassRun& r : res.runs) {
    std::cerr << timeLine(r) << ", " << r.stats.candidates
              << " candidates, " << r.stats.rewritten << " rewritten, " << r.stats.refusedTotal() << " refused\n";
    for (const auto& [code, n] : r.stats.refused) std::cerr << "    refused " << code << ": " << n << "\n";
    for (const auto& [code, n] : r.stats.notes) std::cerr << "    note " << code << ": " << n << "\n";
    for (const auto& [key, v] : r.stats.figures) std::cerr << "    figure " << key << ": " << v << unitSuffix(r.name, key) << "\n";
  }
}

// --timing: each pass's wall time and the verifier's after it, as MLIR's -mlir-timing prints them.
void printTiming(const PipelineResult& res, double load_ms) {
  std::cerr << "pass timing (load+verify " << ms(load_ms) << "):\n";
  for (const PassRun& r : res.runs) std::cerr << timeLine(r) << '\n';
}

nlohmann::ordered_json reportJson(const Options& o, const Pipeline& pipeline, const PipelineResult& res, size_t ops_before,
                                  size_t ops_after, double load_ms) {
  using J = nlohmann::ordered_json;
  J rep;
  rep["input"] = o.in;
  rep["output"] = o.dry_run ? J(nullptr) : J(o.out);
  rep["dry_run"] = o.dry_run;
  rep["pipeline"] = pipelineText(pipeline);
  rep["ops_before"] = ops_before;
  rep["ops_after"] = ops_after;
  rep["load_ms"] = load_ms;
  rep["passes"] = J::array();
  for (const PassRun& r : res.runs) {
    J p;
    p["name"] = r.name;
    p["config"] = r.text;
    p["time_ms"] = r.time_ms;
    p["verify_ms"] = r.verify_ms;
    p["changed"] = r.changed;
    p["candidates"] = r.stats.candidates;
    p["rewritten"] = r.stats.rewritten;
    p["refused"] = J::object();
    for (const auto& [code, n] : r.stats.refused) p["refused"][code] = n;
    p["notes"] = J::object();
    for (const auto& [code, n] : r.stats.notes) p["notes"][code] = n;
    if (!r.stats.figures.empty())
      for (const auto& [key, v] : r.stats.figures) p["figures"][key] = v;
    p["explain"] = J::array();
    for (const ExplainRecord& e : r.explain)
      p["explain"].push_back({{"rank", e.rank}, {"block", e.block_idx}, {"op_index", e.op_index}, {"op_type", e.op_type},
                              {"outcome", e.rewritten ? "rewritten" : "refused"}, {"code", e.code}, {"reason", e.reason}});
    rep["passes"].push_back(std::move(p));
  }
  return rep;
}

PassManagerOptions passManagerOptions(const Options& o) {
  PassManagerOptions pm;
  pm.collect_explain = o.explain || !o.report.empty();
  pm.collect_statistics = o.stats || !o.report.empty();
  if (o.print_after_all || !o.print_after.empty()) {
    pm.after_pass = [&o](const std::string& pass, const Job& j) {
      bool wanted = o.print_after_all;
      for (const auto& n : o.print_after) wanted |= n == pass;
      if (wanted) std::cerr << "// ----- after " << pass << " -----\n" << jobToText(j);
    };
  }
  return pm;
}

// --stats, --explain and a broken invariant, on stderr; the exit code of the run.
int reportRun(const Options& o, const std::string& in, const PipelineResult& res, double load_ms) {
  if (o.stats) printStats(res, load_ms);
  if (o.timing) printTiming(res, load_ms);
  if (o.explain)
    for (const PassRun& r : res.runs)
      for (const ExplainRecord& e : r.explain) std::cerr << explainLine(r.name, e) << '\n';
  if (res.ok) return kExitOk;
  std::cerr << in << ": pass " << res.failed_pass << " broke an invariant; nothing was written:\n";
  for (const Diagnostic& d : res.problems) std::cerr << "  " << d.line() << '\n';
  return kExitPassBroke;
}

// --split-input-file: each case of IN through the pipeline on its own; the results as text.
int rewriteCases(const Options& o, const Pipeline& pipeline) {
  if (!o.report.empty()) throw InputError("--report", "", "does not go with --split-input-file (one report per job)");
  if (o.emit == "json") throw InputError("--emit", "", "--split-input-file writes text (its cases are separated by text lines)");
  PassManagerOptions pm = passManagerOptions(o);
  return forEachInputCase(o.in, o.dry_run ? "" : o.out, [&](std::unique_ptr<Job> job, std::string& output) {
    auto t0 = std::chrono::steady_clock::now();
    auto problems = verifyJob(*job);
    if (!problems.empty()) throw InputErrors(std::move(problems));
    double load_ms = msSince(t0);
    int code = reportRun(o, o.in, runPipeline(pipeline, *job, pm), load_ms);
    if (code == kExitOk) output = jobToText(*job);
    keepUntilExit(std::move(job));
    return code;
  });
}

// --preset and --link: each pass that declares the option and was not given it in its braces
// takes it (the chain's passes then schedule for one machine, as `analyze --preset --link` models
// it). A pipeline with no such pass makes the flag a mistake, said as one.
void scheduleFor(Pipeline& pipeline, const Options& o) {
  for (const auto& [name, value] : {std::pair{std::string("preset"), o.preset}, std::pair{std::string("link"), o.link}}) {
    if (value.empty()) continue;
    bool declared = false;
    for (const ConfiguredPass& cp : pipeline) declared |= cp.info->option(name) != nullptr;
    if (!declared)
      throw InputError("--" + name, "", "no pass of the pipeline \"" + pipelineText(pipeline) + "\" takes " + name + "=");
    setPipelineOption(pipeline, name, value, "--" + name);
  }
}

int runRewrite(const Options& o) {
  const PassRegistry& registry = PassRegistry::builtin();
  Pipeline pipeline = parsePipeline(o.passes, registry, "--passes");
  scheduleFor(pipeline, o);
  for (const auto& name : o.print_after) {
    bool in_pipeline = false;
    for (const auto& cp : pipeline) in_pipeline |= cp.info->name == name;
    if (!in_pipeline)
      throw InputError("--print-after", "", "pass \"" + name + "\" is not in the pipeline \"" + pipelineText(pipeline) + "\"" +
                                                (registry.find(name) ? "" : "; valid passes: " + registry.namesText()));
  }

  if (o.split_input_file) return rewriteCases(o, pipeline);
  auto t0 = std::chrono::steady_clock::now();
  IssueOrders issue_orders;  // the load's check finds them; each pass's check brings them up to date
  auto job = loadVerifiedJob(o.in, {.issue_orders = &issue_orders});
  double load_ms = msSince(t0);
  size_t ops_before = countOps(*job);
  // Both outputs are staged before the pipeline runs: an unwritable one fails now, and neither
  // appears unless both are complete.
  OutputTransaction outputs;
  AtomicFile* out = o.dry_run ? nullptr : &outputs.file(o.out);
  AtomicFile* report = o.report.empty() ? nullptr : &outputs.file(o.report);

  PassManagerOptions pm = passManagerOptions(o);
  pm.issue_orders = &issue_orders;
  PipelineResult res = runPipeline(pipeline, *job, pm);
  if (int code = reportRun(o, o.in, res, load_ms); code != kExitOk) return code;
  if (!o.dry_run) {
    auto write_start = std::chrono::steady_clock::now();
    if (o.emit == "text" || (o.emit.empty() && isTextJobPath(o.out)))
      writeJobText(*job, *out);
    else
      writeJob(*job, *out);
    if (o.timing) std::cerr << "write: " << ms(msSince(write_start)) << "\n";
  }
  if (report) report->write(reportJson(o, pipeline, res, ops_before, countOps(*job), load_ms).dump(2) + "\n");
  outputs.commit();  // OUT and the report both, or neither
  keepUntilExit(std::move(job));  // the process frees it faster than a million destructors
  return kExitOk;
}

const Registrar reg{{"rewrite", "Run a pass pipeline over a job, verify after each pass, and write the result",
                     "sp-opt rewrite job.json out.json --passes=fuse-allreduce-split --explain", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("in", o->in, "Input job (- for stdin)")->required();
                       // OUT is required even with --dry-run: one shape of command line for both.
                       sub.add_option("out", o->out, "Output job (- for stdout); not written with --dry-run")->required();
                       sub.add_option("--passes", o->passes,
                                      "Pipeline: a,b{opt=val},c; `--passes=` for none (default: " + std::string(kDefaultPipeline) +
                                          "; see `sp-opt passes`)")
                           ->expected(0, 1);
                       sub.add_option("--preset", o->preset,
                                      "Cost model of every pass that schedules by one (preset= in their braces): a GPU "
                                      "preset, or host (this machine, measured; see `sp-opt analyze --help`)");
                       sub.add_option("--link", o->link,
                                      "BW_GBPS[,LATENCY_US] for those passes (link=): the link `replay --link` emulates");
                       sub.add_flag("--stats", o->stats, "Per pass: time, candidates, rewritten, refused by reason (stderr)");
                       sub.add_flag("--timing", o->timing,
                                    "Per pass: time and the verifier's after it, then the write's (stderr), without collecting statistics");
                       sub.add_flag("--explain", o->explain, "Every candidate not rewritten, and why (stderr)");
                       sub.add_option("--report", o->report, "Write statistics and explanations as JSON to this file");
                       sub.add_option("--emit", o->emit, "Format of OUT: json or text (default: text when OUT ends in .sptxt, else json)")
                           ->check(CLI::IsMember({"json", "text"}));
                       sub.add_option("--print-after", o->print_after, "Print the job as text to stderr after this pass (repeatable)");
                       sub.add_flag("--print-after-all", o->print_after_all, "Print the job as text to stderr after every pass");
                       sub.add_flag("--dry-run", o->dry_run, "Run and report, but do not write OUT");
                       sub.add_flag("--split-input-file", o->split_input_file,
                                    "IN holds cases separated by \"// -----\" lines: rewrite each alone, write the results "
                                    "as text separated the same way (pass tests: tests/passes/)");
                       return [o] { return runRewrite(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_rewrite
