// sp-opt graph JOB: one rank's data-flow graph as dot text, SVG (through Graphviz's dot) or a
// self-contained html page.
#include <iostream>
#include <memory>

#include "command.h"
#include "write_output.h"
#include "io/loader.h"
#include "support/error.h"
#include "views/diff_html.h"
#include "views/graph_dot.h"
#include "views/graph_svg.h"
#include "views/graphviz.h"
#include "views/view_graph.h"

namespace spopt::app::cmd_graph {
namespace {

struct Options {
  std::string job;
  int64_t rank = 0;
  std::string format = "dot";
  std::string only;
  std::string output = "-";
  bool bus_factors = false;
  int fold = 0;
  size_t max_nodes = 2000;
  size_t all_ranks_max_ops = 20000;
  double dot_timeout = 60;
};

int runGraph(const Options& o) {
  auto job = loadJob(o.job);
  const Program* p = job->program(o.rank);
  if (!p) throw InputError(o.job, "/programs", "no program for rank " + std::to_string(o.rank) + " (--rank)");
  std::string text;
  if (o.format == "html") {
    if (!o.only.empty() || o.fold > 0)
      std::cerr << o.job << ": note: --only and --fold shape the dot and svg graphs; the html page folds by clusters instead\n";
    HtmlGraphOptions html;
    html.bus_factors = o.bus_factors;
    html.all_ranks_max_ops = o.all_ranks_max_ops;
    text = renderGraphHtml(*job, o.rank, "sp-opt graph: " + o.job + ", rank " + std::to_string(o.rank), html);
    writeOutput(o.output, text);
    return kExitOk;
  }
  ViewGraph g = buildProgramGraph(*p, o.bus_factors);
  if (o.only == "comm")
    foldAllButCollectives(g);
  else if (o.fold > 0)
    foldUnchangedChains(g, static_cast<size_t>(o.fold));
  std::string title = o.job + ", rank " + std::to_string(o.rank) + (o.only == "comm" ? " (collectives)" : "");
  GraphDrawing drawing{graphToDot(g, title), g.nodes.size(), o.max_nodes};
  if (o.format == "dot") {
    text = drawing.dot;
  } else {
    if (drawing.tooLarge()) throw InputError(o.job, "", "rank " + std::to_string(o.rank) + ": " + drawing.tooLargeMessage());
    auto svg = dotToSvg(drawing.dot, o.dot_timeout);
    if (svg) {
      text = std::move(*svg);
    } else {
      std::cerr << o.job << ": note: Graphviz's dot did not finish within --dot-timeout " << o.dot_timeout
                << " s; drew the graph with sp-opt's own layered layout instead\n";
      text = layeredSvg(g, title);
    }
  }
  writeOutput(o.output, text);
  return kExitOk;
}

const Registrar reg{{"graph", "Draw one rank's data-flow graph (dot, svg via Graphviz, or html)",
                     "sp-opt graph job.json --rank 1 --format svg -o rank1.svg", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("job", o->job, "Job file (- for stdin)")->required();
                       sub.add_option("--rank", o->rank, "The rank to draw (default 0)");
                       sub.add_option("--format", o->format,
                                      "dot, svg (needs Graphviz's dot) or html (one self-contained page: clusters per name scope, "
                                      "pan, zoom, search; no external tool)")
                           ->check(CLI::IsMember({"dot", "svg", "html"}));
                       sub.add_option("--only", o->only, "dot/svg: comm: keep the collectives, fold the compute between them")
                           ->check(CLI::IsMember({"comm"}));
                       sub.add_option("-o,--output", o->output, "Output file (default stdout)");
                       sub.add_flag("--bus-factors", o->bus_factors, "Label collectives with their ring traffic (all-reduce 2(n-1)/n x payload, ...) instead of their payload");
                       sub.add_option("--fold", o->fold, "dot/svg: fold chains of at least N ops into one node (default 0: never)")
                           ->check(CLI::NonNegativeNumber);
                       sub.add_option("--max-nodes", o->max_nodes, "svg: draw only up to this many nodes (default 2000)");
                       sub.add_option("--dot-timeout", o->dot_timeout,
                                      "svg: seconds Graphviz's dot may take before it is stopped (default 60)")
                           ->check(CLI::PositiveNumber);
                       sub.add_option("--all-ranks-max-ops", o->all_ranks_max_ops,
                                      "html: embed every rank (rank picker) while the job has at most this many ops in all (default 20000); "
                                      "else only --rank");
                       return [o] { return runGraph(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_graph
