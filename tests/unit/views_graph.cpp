#include <catch2/catch.hpp>

#include "diff_helpers.h"
#include "support/error.h"
#include "views/graph_dot.h"
#include "views/graph_svg.h"
#include "views/graphviz.h"
#include "views/view_graph.h"

using namespace spopt;
using namespace spopt::test;

namespace {
size_t countKind(const ViewGraph& g, ViewNode::Kind k) {
  size_t n = 0;
  for (const ViewNode& v : g.nodes) n += v.kind == k;
  return n;
}
const ViewNode* opNode(const ViewGraph& g, std::string_view type) {
  for (const ViewNode& v : g.nodes)
    if (v.kind == ViewNode::OpNode && v.op->type == type) return &v;
  return nullptr;
}
// relu a0->a1 ... a(n-1)->an, then gelu an->out with the given `approximate`.
std::pair<std::string, std::string> chain(int n, bool approximate) {
  std::vector<std::string> vars{var("out")}, ops;
  for (int i = 0; i <= n; ++i) vars.push_back(var("a" + std::to_string(i)));
  for (int i = 0; i < n; ++i) ops.push_back(op("relu", "a" + std::to_string(i), "a" + std::to_string(i + 1)));
  ops.push_back(op("gelu", "a" + std::to_string(n), "out", approximate ? R"({"approximate":true})" : R"({"approximate":false})"));
  return {join(vars), join(ops)};
}
}  // namespace

TEST_CASE("the diff graph is the union of both programs, marked", "[views][graph]") {
  std::string vars = join({var("x"), var("y"), var("s"), var("z")});
  auto before = makeJob({{vars, join({op("relu", "x", "y"), op("c_allreduce_sum", "y", "s", R"({"ring_id":0})"),
                                      op("gelu", "s", "z")})}});
  auto after = makeJob({{vars, join({op("relu", "x", "y"), op("c_reducescatter", "y", "s", R"({"ring_id":0,"nranks":1})"),
                                     op("gelu", "s", "z")})}});
  JobDiff d = diffJobs(*before, *after);
  ViewGraph g = buildDiffGraph(d.ranks[0], false);
  CHECK(opNode(g, "relu")->status == ViewStatus::Unchanged);
  CHECK(opNode(g, "c_allreduce_sum")->status == ViewStatus::Removed);
  CHECK(opNode(g, "c_reducescatter")->status == ViewStatus::Added);
  CHECK(opNode(g, "gelu")->status == ViewStatus::Unchanged);
  CHECK(countKind(g, ViewNode::Input) == 1);  // x
  // relu->allreduce, allreduce->gelu (removed); relu->reducescatter, reducescatter->gelu (added); x->relu.
  size_t removed = 0, added = 0, kept = 0;
  for (const ViewEdge& e : g.edges) {
    removed += e.status == ViewStatus::Removed;
    added += e.status == ViewStatus::Added;
    kept += e.status == ViewStatus::Unchanged;
  }
  CHECK(removed == 2);
  CHECK(added == 2);
  CHECK(kept == 1);
  std::string dot = graphToDot(g, "t");
  CHECK(dot.find(statusFill(ViewStatus::Removed)) != std::string::npos);
  CHECK(dot.find("ring 0, 64 B") != std::string::npos);  // [4,4] float32
}

TEST_CASE("long unchanged chains fold, ops next to a change stay", "[views][graph]") {
  auto before = makeJob({chain(8, false)});
  auto after = makeJob({chain(8, true)});
  JobDiff d = diffJobs(*before, *after);
  ViewGraph g = buildDiffGraph(d.ranks[0], false);
  REQUIRE(opNode(g, "gelu")->status == ViewStatus::Changed);
  CHECK(opNode(g, "gelu")->notes == std::vector<std::string>{"attrs.approximate"});
  foldUnchangedChains(g, 3);
  REQUIRE(countKind(g, ViewNode::Folded) == 1);
  for (const ViewNode& v : g.nodes)
    if (v.kind == ViewNode::Folded) CHECK(v.folded_ops == 7);
  CHECK(countKind(g, ViewNode::OpNode) == 2);  // the last relu (context) and gelu
  CHECK(countKind(g, ViewNode::Input) == 0);   // a0 only fed the folded run
  CHECK(g.edges.size() == 2);                  // folded -> relu -> gelu

  ViewGraph short_chains = buildDiffGraph(d.ranks[0], false);
  foldUnchangedChains(short_chains, 8);  // 7 < 8: nothing folds
  CHECK(countKind(short_chains, ViewNode::Folded) == 0);
}

TEST_CASE("a branch ends a chain", "[views][graph]") {
  // a -> r1 -> b; b feeds both r2 and r3: r1 has two successors, so nothing links through it.
  std::string vars = join({var("a"), var("b"), var("c"), var("d")});
  auto job = makeJob({{vars, join({op("relu", "a", "b"), op("relu", "b", "c"), op("gelu", "b", "d")})}});
  ViewGraph g = buildProgramGraph(*job->programs[0], false);
  foldUnchangedChains(g, 2);
  CHECK(countKind(g, ViewNode::Folded) == 0);
}

TEST_CASE("only comm keeps the collectives and folds the compute between them", "[views][graph]") {
  std::string vars = join({var("a"), var("b"), var("c"), var("d"), var("e")});
  auto job = makeJob({{vars, join({op("relu", "a", "b"), op("all_reduce", "b", "c", R"({"ring_id":0})", "x", "out"),
                                   op("relu", "c", "d"), op("gelu", "d", "e")})}});
  ViewGraph g = buildProgramGraph(*job->programs[0], false);
  foldAllButCollectives(g);
  CHECK(opNode(g, "all_reduce") != nullptr);
  CHECK(opNode(g, "relu") != nullptr);  // the first relu is alone before the all-reduce
  CHECK(opNode(g, "gelu") == nullptr);
  REQUIRE(countKind(g, ViewNode::Folded) == 1);
  for (const ViewNode& v : g.nodes)
    if (v.kind == ViewNode::Folded) CHECK(v.folded_ops == 2);
}

TEST_CASE("dot labels escape quotes and backslashes", "[views][graph]") {
  auto job = makeJob({{join({var(R"(q\"x)"), var(R"(b\\s)")}), op("relu", R"(q\"x)", R"(b\\s)")}});
  std::string dot = graphToDot(buildProgramGraph(*job->programs[0], false), "t");
  INFO(dot);
  CHECK(dot.find(R"(label="q\"x")") != std::string::npos);
  CHECK(dot.find(R"(Out=b\\s")") != std::string::npos);
}

TEST_CASE("Graphviz runs as a filter and its failures are reported", "[views][graphviz]") {
  CHECK(findOnPath("sh").has_value());
  CHECK_FALSE(findOnPath("no-such-tool-for-sp-opt").has_value());
  if (!findOnPath("dot")) {
    WARN("Graphviz's dot is not installed: skipping the rendering checks");
    return;
  }
  auto svg = dotToSvg("digraph { a -> b }", 60);
  REQUIRE(svg);
  CHECK(svg->find("<svg") != std::string::npos);
  CHECK_THROWS_AS(dotToSvg("digraph { a -> ", 60), InputError);
  // Larger than a pipe buffer both ways: the filter must not deadlock.
  std::string big = "digraph {\n";
  for (int i = 0; i < 3000; ++i) big += "  n" + std::to_string(i) + " -> n" + std::to_string(i + 1) + ";\n";
  auto big_svg = dotToSvg(big + "}\n", 120);
  REQUIRE(big_svg);
  CHECK(big_svg->size() > 100000);
  // Past its time limit dot is killed and the caller told so (it falls back to its own layout).
  CHECK_FALSE(dotToSvg(big + "}\n", 0.001).has_value());
}

TEST_CASE("the fallback SVG draws every node of the graph", "[views][graph]") {
  auto job = makeJob({chain(5, false)});
  ViewGraph g = buildProgramGraph(*job->programs[0], false);
  std::string svg = layeredSvg(g, "t");
  CHECK(svg.rfind("<svg", 0) == 0);
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  CHECK(rects == g.nodes.size());
  CHECK(svg.find(">gelu<") != std::string::npos);
}

TEST_CASE("a diff graph folds what lies away from the changes", "[views][graph]") {
  // relu x8 then gelu; only gelu changes. Context 1 keeps the last relu; the other seven fold.
  auto before = makeJob({chain(8, false)});
  auto after = makeJob({chain(8, true)});
  JobDiff d = diffJobs(*before, *after);
  ViewGraph g = buildDiffGraph(d.ranks[0], false);
  foldAwayFromChanges(g, 1, 3);
  REQUIRE(countKind(g, ViewNode::Folded) == 1);
  for (const ViewNode& v : g.nodes)
    if (v.kind == ViewNode::Folded) CHECK(v.folded_ops == 7);
  CHECK(countKind(g, ViewNode::OpNode) == 2);
  CHECK(countKind(g, ViewNode::Input) == 0);

  ViewGraph wide = buildDiffGraph(d.ranks[0], false);
  foldAwayFromChanges(wide, 3, 3);  // three hops of context: five relus left to fold
  for (const ViewNode& v : wide.nodes)
    if (v.kind == ViewNode::Folded) CHECK(v.folded_ops == 5);
  CHECK(countKind(wide, ViewNode::OpNode) == 4);

  ViewGraph none = buildDiffGraph(d.ranks[0], false);
  foldAwayFromChanges(none, 1, 0);  // 0: never fold
  CHECK(countKind(none, ViewNode::OpNode) == 9);
}

TEST_CASE("folded regions of a diff name the collectives they hide", "[views][graph]") {
  std::string vars = join({var("a"), var("b"), var("c"), var("d"), var("e"), var("f")});
  auto ops = [](const char* approximate) {
    return join({op("relu", "a", "b"), op("all_reduce", "b", "c", R"({"ring_id":0})", "x", "out"), op("relu", "c", "d"),
                 op("relu", "d", "e"), op("gelu", "e", "f", std::string(R"({"approximate":)") + approximate + "}")});
  };
  auto before = makeJob({{vars, ops("false")}});
  auto after = makeJob({{vars, ops("true")}});
  JobDiff d = diffJobs(*before, *after);
  ViewGraph g = buildDiffGraph(d.ranks[0], false);
  foldAwayFromChanges(g, 1, 2);
  // Only gelu changed; with one hop of context relu(d) stays. relu(a), the all-reduce and relu(c)
  // are connected and have no kept op above them: one region, and it holds a collective.
  size_t folded = 0;
  for (const ViewNode& v : g.nodes)
    if (v.kind == ViewNode::Folded) {
      ++folded;
      CHECK(v.folded_ops == 3);
      CHECK(v.folded_collectives == 1);
    }
  CHECK(folded == 1);
  CHECK(graphToDot(g, "t").find("(1 collective)") != std::string::npos);
}

TEST_CASE("edges of a folded node are bundled per neighbour", "[views][graph]") {
  std::string vars = join({var("a"), var("b"), var("c"), var("d"), var("e")});
  auto ops = [](const char* axis) {
    return join({op("relu", "a", "b"), op("relu", "b", "c"), op("gelu", "b", "d"),
                 op("concat", "c,d", "e", std::string(R"({"axis":)") + axis + "}")});
  };
  auto before = makeJob({{vars, ops("0")}});
  auto after = makeJob({{vars, ops("1")}});
  JobDiff d = diffJobs(*before, *after);
  ViewGraph g = buildDiffGraph(d.ranks[0], false);
  foldAwayFromChanges(g, 0, 2);
  REQUIRE(countKind(g, ViewNode::Folded) == 1);
  REQUIRE(g.edges.size() == 1);  // c and d, from the folded region to concat
  CHECK(g.edges[0].more_vars == 1);
  CHECK(graphToDot(g, "t").find("+1 more var\"") != std::string::npos);
}
