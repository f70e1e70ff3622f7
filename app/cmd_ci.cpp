// sp-opt ci JOB: the gate a CI job runs on an exported program. Validates it (format, verifier,
// cross-rank agreement, hang check), analyzes it, and holds its figures to budgets and to a
// baseline; prints the result as text, json, JUnit XML or GitHub Actions workflow commands.
// Exit 0 when every check passes, 1 when one fails, 2 when the job or the budgets cannot be read.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "analysis/gates.h"
#include "analysis/job_report.h"
#include "command.h"
#include "io/atomic_file.h"
#include "io/loader.h"
#include "job_checks.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "views/check_report.h"
#include "write_output.h"

namespace spopt::app::cmd_ci {
namespace {

struct Options {
  std::string job, budgets, baseline, max_regression, preset, format = "text", output = "-";
  std::optional<std::string> passes;  // rewrite first, and gate what the pipeline makes
  std::array<std::string, 4> limit;  // by Figure, as given on the command line
  bool strict = false;
  int64_t dynamic_dim = 1;
};

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open it");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The budgets file named by --budgets, else JOB.budgets.json beside the job when it exists (the
// ".json" of the job's name replaced); then the command line's values over it.
Budgets gatherBudgets(const Options& o) {
  std::string path = o.budgets;
  if (path.empty() && o.job != "-") {
    std::filesystem::path beside(o.job);
    beside.replace_extension(".budgets.json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(beside, ec)) path = beside.string();
  }
  Budgets b;
  if (!path.empty()) {
    b = parseBudgets(path, readText(path));
    if (!b.baseline.empty() && std::filesystem::path(b.baseline).is_relative())
      b.baseline = (std::filesystem::path(path).parent_path() / b.baseline).string();
  }
  for (Figure f : kFigures) {
    const std::string& given = o.limit[size_t(f)];
    std::string option = "--" + std::string(figureName(f));
    for (char& c : option) c = c == '_' ? '-' : c;
    if (!given.empty()) b.limit[size_t(f)] = parseFigureValue(f, given, option, "");
  }
  if (!o.baseline.empty()) b.baseline = o.baseline;
  if (!o.max_regression.empty()) b.max_regression = parsePercent(o.max_regression, "--max-regression", "");
  if (!o.preset.empty()) b.preset = o.preset;
  if (b.preset.empty()) b.preset = "h100-nvlink";
  if (!b.baseline.empty() && !b.max_regression) b.max_regression = 0.0;
  return b;
}

HardwareModel modelOf(const std::string& preset) {
  auto m = presetModel(preset);
  if (!m || preset == "host") throw InputError("--preset", "", "unknown or unmeasured preset \"" + preset + "\" (h100-nvlink, h200-nvlink, a100-nvlink)");
  return *m;
}

// A baseline is a saved analyze report (format "sp-opt.analyze", its first key) or a job.
JobFigures baselineFigures(const std::string& path, const HardwareModel& model, int64_t dynamic_dim) {
  std::string head;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "", "cannot open the baseline");
    head.resize(256);
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
  }
  if (head.find("\"sp-opt.analyze\"") != std::string::npos) return figuresOfAnalyzeJson(path, readText(path));
  auto job = loadJob(path);
  sizeDynamicDimsForCosting(*job, path, dynamic_dim);
  JobFigures f = figuresOf(analyzeJob(*job, model));
  keepUntilExit(std::move(job));
  return f;
}

void addGates(CheckSuite& suite, const JobValidation& v, const Budgets& b, const JobFigures& now, const JobFigures* base) {
  for (const GateResult& g : evaluateGates(now, b, base)) {
    CheckCase c;
    c.name = std::string(g.regression ? "regression " : "budget ") + figureName(g.figure) + (g.rank >= 0 ? " rank " + std::to_string(g.rank) : "");
    c.status = g.breached ? CheckCase::Failed : CheckCase::Passed;
    if (g.breached) c.failures.push_back({v.suite.name, "", g.message});
    else c.detail = g.message;
    c.figures = {{"value", g.value}, {"limit", g.limit}};
    if (g.regression) c.figures.push_back({"baseline", g.baseline});
    suite.cases.push_back(std::move(c));
  }
}

// Runs the pipeline on the job in memory (the verifier after every pass), then proves the result
// hang-free: the "rewrite" and "hang-free after rewrite" cases. False when either fails.
bool rewriteInPlace(CheckSuite& suite, Job& job, const std::string& passes) {
  Pipeline pipeline = parsePipeline(passes, PassRegistry::builtin(), "--passes");
  auto t = std::chrono::steady_clock::now();
  PipelineResult res = runPipeline(pipeline, job);
  CheckCase rewrite{"rewrite", CheckCase::Passed, {}, {}, pipelineText(pipeline),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), {}};
  if (!res.ok) {
    rewrite.status = CheckCase::Failed;
    for (Diagnostic d : res.problems) {
      d.message = "after pass " + res.failed_pass + ": " + d.message;
      rewrite.failures.push_back(std::move(d));
    }
  }
  suite.cases.push_back(rewrite);
  if (!res.ok) return false;
  HangReport hang = checkHangs(job);
  CheckCase c{"hang-free after rewrite", hang.errors.empty() ? CheckCase::Passed : CheckCase::Failed, hang.errors, hang.warnings, "", 0, {}};
  suite.cases.push_back(c);
  return hang.errors.empty();
}

int runCi(const Options& o) {
  Budgets budgets = gatherBudgets(o);
  HardwareModel model = modelOf(budgets.preset);
  JobValidation v = validateJobFile(o.job, o.strict);
  CheckSuite suite = v.suite;
  bool loaded = v.job != nullptr;
  if (loaded && v.problems.empty() && o.passes && !rewriteInPlace(suite, *v.job, *o.passes)) {
    suite.cases.push_back({"gates", CheckCase::Skipped, {}, {}, "skipped: the rewrite failed", 0, {}});
  } else if (loaded && v.problems.empty()) {
    sizeDynamicDimsForCosting(*v.job, o.job, o.dynamic_dim);
    JobFigures now = figuresOf(analyzeJob(*v.job, model));
    std::optional<JobFigures> base;
    if (!budgets.baseline.empty()) base = baselineFigures(budgets.baseline, model, o.dynamic_dim);
    addGates(suite, v, budgets, now, base ? &*base : nullptr);
  } else if (loaded) {
    suite.cases.push_back({"gates", CheckCase::Skipped, {}, {}, "skipped: the job is not valid", 0, {}});
  }
  writeOutput(o.output, renderChecks(o.format, {suite}));
  if (v.job) keepUntilExit(std::move(v.job));
  if (!loaded) return kExitBadInput;
  return suite.failed() ? kExitDiffers : kExitOk;
}

const Registrar reg{{"ci", "The CI gate: validate (hang check included), analyze, and hold the figures to budgets and a baseline",
                     "sp-opt ci job.json --peak-memory '40 GiB' --baseline main.analyze.json --max-regression 5% --format junit -o ci.xml",
                     [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("job", o->job, "Job file")->required();
                       sub.add_option("--budgets", o->budgets, "Budgets file (default: JOB.budgets.json beside the job, when present)");
                       sub.add_option("--peak-memory", o->limit[size_t(Figure::PeakMemory)], "Budget of each rank's peak memory (\"40 GiB\")");
                       sub.add_option("--activation-memory", o->limit[size_t(Figure::ActivationMemory)], "Budget of each rank's activation memory");
                       sub.add_option("--exposed-comm", o->limit[size_t(Figure::ExposedComm)], "Budget of each rank's exposed communication (\"2 ms\")");
                       sub.add_option("--step-time", o->limit[size_t(Figure::StepTime)], "Budget of the simulated step time");
                       sub.add_option("--baseline", o->baseline, "A job, or a saved `analyze --format json` report, to compare the figures with");
                       sub.add_option("--max-regression", o->max_regression, "How much worse than the baseline a figure may be (\"5%\"; default 0%)");
                       sub.add_option("--passes", o->passes, "Rewrite first with this pipeline (`--passes=` none; see `sp-opt passes`), then gate the result")
                           ->expected(0, 1);
                       sub.add_option("--preset", o->preset, "Hardware model of the analysis (default h100-nvlink)");
                       sub.add_option("--dynamic-dim", o->dynamic_dim,
                                      "The size a dynamic dimension (-1, e.g. Paddle's batch) is costed as (default 1)")
                           ->check(CLI::Range(int64_t(1), int64_t(1) << 31));
                       sub.add_flag("--strict", o->strict, "A lost dependency (a wait on an event not recorded before it) fails the gate");
                       sub.add_option("--format", o->format, "text, json, junit (JUnit XML) or github (Actions workflow commands)")
                           ->check(CLI::IsMember({"text", "json", "junit", "github"}));
                       sub.add_option("-o,--output", o->output, "Output file (default stdout)");
                       return [o] { return runCi(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_ci
