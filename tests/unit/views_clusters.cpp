// Clusters and the layered layout behind the clustered html views.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "diff_helpers.h"
#include "gen/generate.h"
#include "views/clusters.h"
#include "views/graph_page.h"
#include "views/layered_layout.h"

using namespace spopt;
using namespace spopt::test;

namespace {

using Edges = std::vector<std::pair<uint32_t, uint32_t>>;

// Every edge the layout did not reverse goes strictly down; reversed ones strictly up; no two
// nodes of a layer share a position, and positions are 0..k-1.
void checkLayout(uint32_t n, const Edges& edges, const LayeredLayout& l) {
  REQUIRE(l.layer.size() == n);
  for (size_t i = 0; i < edges.size(); ++i) {
    auto [a, b] = edges[i];
    if (a == b) continue;
    if (l.reversed[i]) CHECK(l.layer[a] > l.layer[b]);
    else CHECK(l.layer[a] < l.layer[b]);
  }
  std::vector<std::set<uint32_t>> rows(l.layers);
  for (uint32_t v = 0; v < n; ++v) {
    REQUIRE(l.layer[v] < l.layers);
    CHECK(rows[l.layer[v]].insert(l.order[v]).second);
  }
  for (const auto& row : rows)
    if (!row.empty()) CHECK(*row.rbegin() == row.size() - 1);
}

std::string scoped(const std::string& type, const std::string& x, const std::string& out, const std::string& scope, int role,
                   const std::string& more = "") {
  return op(type, x, out, R"({"op_role":)" + std::to_string(role) + R"(,"op_namescope":")" + scope + "\"" + more + "}");
}

const Cluster* named(const ClusterTree& t, const std::string& name, uint32_t parent = 0) {
  for (const Cluster& c : t.clusters)
    if (c.name == name && c.parent == parent) return &c;
  return nullptr;
}
uint32_t idOf(const ClusterTree& t, const Cluster* c) { return static_cast<uint32_t>(c - t.clusters.data()); }

}  // namespace

TEST_CASE("layered layout of a chain is one node per layer, in order", "[views][layout]") {
  Edges chain{{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  LayeredLayout l = layoutLayered(5, chain);
  checkLayout(5, chain, l);
  CHECK(l.layers == 5);
  for (uint32_t v = 0; v < 5; ++v) CHECK(l.layer[v] == v);
}

TEST_CASE("layered layout of a diamond puts the two arms side by side", "[views][layout]") {
  Edges diamond{{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  LayeredLayout l = layoutLayered(4, diamond);
  checkLayout(4, diamond, l);
  CHECK(l.layers == 3);
  CHECK(l.layer[1] == 1);
  CHECK(l.layer[2] == 1);
  CHECK(l.order[1] != l.order[2]);
}

TEST_CASE("layered layout pulls a source down next to its only reader", "[views][layout]") {
  // 0 -> 1 -> 2 -> 3 and a constant 4 read only by 3: it sits right above 3, not at the top.
  Edges e{{0, 1}, {1, 2}, {2, 3}, {4, 3}};
  LayeredLayout l = layoutLayered(5, e);
  checkLayout(5, e, l);
  CHECK(l.layer[4] == l.layer[3] - 1);
}

TEST_CASE("layered layout breaks cycles by program order and marks the edges it turns", "[views][layout]") {
  Edges cycle{{0, 1}, {1, 2}, {2, 0}, {2, 2}, {1, 2}};
  LayeredLayout l = layoutLayered(3, cycle);
  checkLayout(3, cycle, l);
  CHECK(l.reversed[2]);  // 2 -> 0 points back to the first node
  CHECK(std::count(l.reversed.begin(), l.reversed.end(), true) == 1);
}

TEST_CASE("barycentric sweeps untangle a crossing", "[views][layout]") {
  // Top row 0, 1; bottom row 2, 3 with 0 -> 3 and 1 -> 2: in index order the two edges cross.
  Edges e{{0, 3}, {1, 2}};
  LayeredLayout l = layoutLayered(4, e);
  checkLayout(4, e, l);
  bool crossing = (l.order[0] < l.order[1]) != (l.order[3] < l.order[2]);
  CHECK_FALSE(crossing);
}

TEST_CASE("layered layout of a random DAG respects every edge", "[views][layout]") {
  uint32_t n = 2000;
  Edges e;
  uint64_t s = 12345;
  auto next = [&] { return s = s * 6364136223846793005ull + 1442695040888963407ull, static_cast<uint32_t>(s >> 33); };
  for (uint32_t v = 1; v < n; ++v)
    for (int k = 0; k < 3; ++k) e.emplace_back(next() % v, v);  // edges go to higher indices: acyclic
  LayeredLayout l = layoutLayered(n, e);
  checkLayout(n, e, l);
  CHECK(std::none_of(l.reversed.begin(), l.reversed.end(), [](bool r) { return r; }));
}

TEST_CASE("clusters follow name scopes, split forward and backward, and bundle edges", "[views][clusters]") {
  std::string vars = join({var("x"), var("a"), var("b"), var("c"), var("d"), var("g"), var("h"), var("k"), var("l"), var("m")});
  std::string ops = join({
      scoped("relu", "x", "a", "/layer_0/", 0),
      scoped("c_allreduce_sum", "a", "b", "/layer_0/", 0, R"(,"ring_id":0)"),
      scoped("gelu", "b", "c", "/auto_parallel/reshard", 0),  // planner op: joins layer_0
      scoped("relu", "c", "d", "/layer_1/", 0),
      scoped("reduce_sum", "d", "g", "/loss/", 256),
      scoped("relu_grad", "g", "h", "/layer_1/", 1),
      scoped("relu_grad", "h", "k", "/layer_0/", 1),
      scoped("relu_grad", "k", "l", "/layer_0/", 1),
      scoped("sgd", "l", "m", "/optimizer_0/", 2),
  });
  auto job = makeJob({{vars, ops}});
  ViewGraph g = buildProgramGraph(*job->programs[0], false);
  ClusterTree t = buildClusters(g);
  const Cluster& root = t.clusters[0];
  CHECK(root.ops == 9);
  std::vector<std::string> top;
  for (const ClusterItem& i : root.items) {
    REQUIRE(i.is_cluster);
    top.push_back(t.clusters[i.id].name);
  }
  CHECK(top == std::vector<std::string>{"layer_0", "layer_1", "loss", "optimizer_0"});
  const Cluster* layer0 = named(t, "layer_0");
  REQUIRE(layer0);
  CHECK(layer0->ops == 5);  // relu, allreduce, the reshard gelu, two relu_grad
  CHECK(layer0->rings.at(0).count == 1);
  CHECK(layer0->rings.at(0).bytes == 64);  // [4,4] float32
  // Mixed phases and at least 4 ops: forward and backward sub-clusters.
  const Cluster* fwd = named(t, "forward", idOf(t, layer0));
  const Cluster* bwd = named(t, "backward", idOf(t, layer0));
  REQUIRE(fwd);
  REQUIRE(bwd);
  CHECK(fwd->ops == 3);
  CHECK(bwd->ops == 2);
  // layer_1 has 2 ops: not split.
  CHECK(named(t, "layer_1")->items.size() == 2);
  // c: layer_0 -> layer_1, h: layer_1 -> layer_0; d: layer_1 -> loss; g: loss -> layer_1.
  CHECK(layer0->vars_out == 2);  // c, l
  CHECK(layer0->vars_in == 1);   // h
  size_t layer0_to_layer1 = 0;
  for (const ClusterEdge& e : root.edges) {
    const ClusterItem &from = root.items[e.from], &to = root.items[e.to];
    if (t.clusters[from.id].name == "layer_0" && t.clusters[to.id].name == "layer_1") layer0_to_layer1 += e.vars;
  }
  CHECK(layer0_to_layer1 == 1);
  // The layout of the top level has one node per top cluster and the cycle layer_0 <-> layer_1
  // broken by program order.
  CHECK(root.layout.layer.size() == 4);
  CHECK(root.layout.layer[0] < root.layout.layer[1]);
}

TEST_CASE("ops without a scope cluster by phase, numbered scope families fold, big clusters are chunked", "[views][clusters]") {
  std::vector<std::string> vars{var("v0")}, ops;
  for (int i = 0; i < 700; ++i) {
    vars.push_back(var("v" + std::to_string(i + 1)));
    ops.push_back(op("relu", "v" + std::to_string(i), "v" + std::to_string(i + 1), R"({"op_role":0,"op_namescope":"/"})"));
  }
  for (int i = 0; i < 6; ++i) {
    vars.push_back(var("p" + std::to_string(i)));
    ops.push_back(op("sgd", "v700", "p" + std::to_string(i), R"({"op_role":2,"op_namescope":"/optimizer_)" + std::to_string(i) + "/\"}"));
  }
  auto job = makeJob({{join(vars), join(ops)}});
  ViewGraph g = buildProgramGraph(*job->programs[0], false);
  ClusterOptions o;
  ClusterTree t = buildClusters(g, o);
  const Cluster* fwd = named(t, "(forward)");
  REQUIRE(fwd);
  CHECK(fwd->ops == 700);
  // 700 direct ops > max_items: chunks of 200.
  REQUIRE(fwd->items.size() == 4);
  CHECK(t.clusters[fwd->items[0].id].name == "ops 1\u2013200");
  CHECK(t.clusters[fwd->items[3].id].ops == 100);
  for (const Cluster& c : t.clusters) CHECK(c.items.size() <= o.max_items);
  const Cluster* opt = named(t, "optimizer");
  REQUIRE(opt);
  CHECK(opt->ops == 6);
  CHECK(opt->vars_in == 1);  // v700
}

TEST_CASE("every op of a generated GPT rank lands in one cluster, every layer is a top-level box", "[views][clusters]") {
  gen::GenOptions go;
  go.model = gen::Model::Gpt;
  go.tp = 4;
  go.layers = 6;
  go.sequence_parallel = true;
  auto job = loadJobFromText(gen::generateJobText(go), "gpt.json");
  const Program& p = *job->programs[1];
  ViewGraph g = buildProgramGraph(p, false);
  ClusterTree t = buildClusters(g);
  size_t ops = 0;
  for (const auto& b : p.blocks) ops += b->ops.size();
  CHECK(t.clusters[0].ops == ops);
  // Each op appears as an item exactly once.
  std::vector<int> seen(g.nodes.size(), 0);
  for (const Cluster& c : t.clusters)
    for (const ClusterItem& i : c.items)
      if (!i.is_cluster) ++seen[i.id];
  for (uint32_t v = 0; v < g.nodes.size(); ++v) CHECK(seen[v] == (g.nodes[v].kind == ViewNode::OpNode ? 1 : 0));
  for (int l = 0; l < 6; ++l) CHECK(named(t, "layer_" + std::to_string(l)));
  CHECK_FALSE(named(t, "auto_parallel"));
  // Per cluster, the layout respects every bundled edge.
  for (const Cluster& c : t.clusters) {
    Edges e;
    for (const ClusterEdge& x : c.edges) e.emplace_back(x.from, x.to);
    checkLayout(static_cast<uint32_t>(c.items.size()), e, c.layout);
  }
  std::string data = graphPageData({1, &g, &t});
  CHECK(data.find("\"layer_5\"") != std::string::npos);
  CHECK(data.find('<') == std::string::npos);  // nothing that could close the script element
}

TEST_CASE("a generated rank of some 14k ops: every cluster bounded, every layout valid", "[views][clusters]") {
  // Correctness at size, not timing: the chunking keeps each cluster's layout small whatever the
  // program, and layouts stay valid on real-shaped data (residuals, grads, optimizer fan-in).
  gen::GenOptions go;
  go.model = gen::Model::Gpt;
  go.layers = 250;
  auto job = loadJobFromText(gen::generateJobText(go), "gpt.json");
  const Program& p = *job->programs[0];
  ViewGraph g = buildProgramGraph(p, false);
  ClusterOptions o;
  o.max_items = 200;
  o.chunk = 100;
  ClusterTree t = buildClusters(g, o);
  size_t ops = 0;
  for (const auto& b : p.blocks) ops += b->ops.size();
  REQUIRE(ops > 10000);
  CHECK(t.clusters[0].ops == ops);
  size_t items = 0;
  for (const Cluster& c : t.clusters) {
    items += c.items.size();
    CHECK(c.items.size() <= o.max_items);
    Edges e;
    for (const ClusterEdge& x : c.edges) e.emplace_back(x.from, x.to);
    checkLayout(static_cast<uint32_t>(c.items.size()), e, c.layout);
  }
  CHECK(items == ops + t.clusters.size() - 1);  // each op and each cluster but the root is one item
  // 250 layers + final_norm, loss, optimizer at the top: more than 200, so the layers are grouped
  // 100 a box and the other three stay as they are.
  std::vector<std::string> top;
  for (const ClusterItem& i : t.clusters[0].items) top.push_back(t.clusters[i.id].name);
  CHECK(top == std::vector<std::string>{"layer_0 \u2026 layer_99", "layer_100 \u2026 layer_199", "layer_200 \u2026 layer_249",
                                        "final_norm", "loss", "optimizer"});
  const Cluster& first = t.clusters[t.clusters[0].items[0].id];
  CHECK(first.items.size() == 100);
  CHECK(t.clusters[first.items[0].id].name == "layer_0");
  CHECK(t.clusters[first.items[0].id].depth == 2);
}

TEST_CASE("the page's embedded data cannot end its script element early", "[views][clusters]") {
  std::string vars = join({var("x"), var("a</script><b>")});
  auto job = makeJob({{vars, join({op("relu", "x", "a</script><b>", R"({"op_namescope":"/odd \"scope\"/","op_role":0})")})}});
  ViewGraph g = buildProgramGraph(*job->programs[0], false);
  ClusterTree t = buildClusters(g);
  REQUIRE(t.clusters.size() == 2);
  CHECK(t.clusters[1].name == "odd \"scope\"");
  std::string page = graphPageSection({{0, &g, &t}}, GraphPageOptions{});
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closes;
  CHECK(closes == 2);  // the data element's and the script's own
  CHECK(page.find("a\\u003c/script>\\u003cb>") != std::string::npos);
}
