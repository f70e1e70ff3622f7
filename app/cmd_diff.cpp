// sp-opt diff BEFORE AFTER: what a rewrite changed, rank by rank. Exit codes as diff(1):
// 0 same, 1 different, 2 trouble.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "analysis/job_diff.h"
#include "analysis/value_names.h"
#include "command.h"
#include "write_output.h"
#include "io/loader.h"
#include "support/error.h"
#include "views/diff_html.h"
#include "views/diff_json.h"
#include "views/diff_text.h"
#include "views/graph_dot.h"
#include "views/view_graph.h"

namespace spopt::app::cmd_diff {
namespace {

struct Options {
  std::string before, after;
  std::optional<int64_t> rank;
  std::string format = "text";
  std::string output = "-";
  std::string color = "auto";
  bool summary = false;
  bool bus_factors = false;
  bool ignore_temp_names = false;
  int fold = 3;
  int context = 1;
  size_t max_nodes = 300;
  size_t all_ranks_max_ops = 20000;
};

bool useColor(const Options& o) {
  if (o.color != "auto") return o.color == "always";
  return o.output == "-" && isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
}

// The rank whose graph dot and html draw: the one asked for, else the first that differs.
const RankDiff& rankToDraw(const JobDiff& d) {
  for (const RankDiff& r : d.ranks)
    if (!r.same()) return r;
  return d.ranks.front();
}

// Seconds since the last call, for the -v phase timings that the benchmark reads.
double lap() {
  static auto last = std::chrono::steady_clock::now();
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - last).count();
  last = now;
  return s;
}

int runDiff(const Options& o) {
  lap();
  auto before = loadJob(o.before);
  auto after = loadJob(o.after);
  spdlog::debug("loaded both jobs in {:.3f} s", lap());
  if (o.ignore_temp_names) {
    nameTemporariesByPosition(*before);
    nameTemporariesByPosition(*after);
  }
  DiffOptions opts;
  opts.rank = o.rank;
  opts.bus_factors = o.bus_factors;
  JobDiff diff = diffJobs(*before, *after, opts);
  spdlog::debug("compared in {:.3f} s", lap());
  std::string text;
  if (o.format == "json") {
    text = renderDiffJson(diff);
  } else if (o.format == "text") {
    text = renderDiffText(diff, TextStyle{.color = useColor(o), .summary = o.summary});
  } else {
    if (diff.ranks.empty()) throw InputError(o.before, "", "neither job has any program to draw");
    const RankDiff& r = rankToDraw(diff);
    if (o.format == "dot") {
      ViewGraph g = buildDiffGraph(r, o.bus_factors);
      foldAwayFromChanges(g, static_cast<size_t>(o.context), static_cast<size_t>(o.fold));
      text = graphToDot(g, "rank " + std::to_string(r.rank) + ": " + o.before + " -> " + o.after);
    } else {
      HtmlGraphOptions html;
      html.bus_factors = o.bus_factors;
      html.open_budget = o.max_nodes;
      html.all_ranks_max_ops = o.all_ranks_max_ops;
      text = renderDiffHtml(diff, r, html);
    }
  }
  spdlog::debug("rendered {} in {:.3f} s", o.format, lap());
  writeOutput(o.output, text);
  return diff.same() ? kExitOk : kExitDiffers;
}

const Registrar reg{{"diff", "Show what a rewrite changed: ops and vars per rank, collectives and bytes moved",
                     "sp-opt diff before.json after.json --format html -o diff.html", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("before", o->before, "The job before the rewrite (- for stdin)")->required();
                       sub.add_option("after", o->after, "The job after the rewrite")->required();
                       sub.add_option("--rank", o->rank, "Compare only this rank (dot/html: the rank to draw)");
                       sub.add_option("--format", o->format, "text, json (for scripts), dot or html (one self-contained file)")
                           ->check(CLI::IsMember({"text", "json", "dot", "html"}));
                       sub.add_option("-o,--output", o->output, "Output file (default stdout)");
                       sub.add_flag("--summary", o->summary, "text: per rank what changed (counts) and its collectives, without the op listing");
                       sub.add_option("--color", o->color, "Colour text: auto (a terminal without NO_COLOR), always, never")
                           ->check(CLI::IsMember({"auto", "always", "never"}));
                       sub.add_flag("--ignore-temp-names", o->ignore_temp_names,
                                    "Name temporaries by where they are written (%0, %1, ...), as SSA values compare: a job sent through a PIR file keeps only its parameters' and inputs' names");
                       sub.add_flag("--bus-factors", o->bus_factors,
                                    "Label collectives in op listings and graphs with their ring traffic (all-reduce 2(n-1)/n x payload, ...) instead of their payload");
                       sub.add_option("--fold", o->fold,
                                      "dot: fold runs of at least N unchanged ops away from changes into one node (0: never)")
                           ->check(CLI::NonNegativeNumber);
                       sub.add_option("--context", o->context, "dot: unchanged ops up to N hops from a change stay drawn (default 1)")
                           ->check(CLI::NonNegativeNumber);
                       sub.add_option("--max-nodes", o->max_nodes,
                                      "html: clusters holding changes start open while at most this many boxes show (default 300)");
                       sub.add_option("--all-ranks-max-ops", o->all_ranks_max_ops,
                                      "html: embed every rank (rank picker) while both jobs have at most this many ops in all (default 20000)");
                       return [o] { return runDiff(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_diff
