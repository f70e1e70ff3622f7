// recompute-activations: the catalogue's recompute rule, the op-pattern parser, the budget
// candidates (sub-chains of dependent segments) and their memory model, and the budget searches
// (greedy never below the exact optimum, exact never above greedy) on generated jobs.
#include <catch2/catch.hpp>

#include "analysis/activations.h"
#include "analysis/memory.h"
#include "gen/generate.h"
#include "io/loader.h"
#include "ops/recompute_rule.h"
#include "passes/recompute_policy.h"
#include "passes/recompute_subsets.h"
#include "passes/registry.h"
#include "support/error.h"

using namespace spopt;

namespace {

std::unique_ptr<Job> genGpt(int64_t tp, int64_t layers, double dropout = 0.1) {
  gen::GenOptions o;
  o.model = gen::Model::Gpt;
  o.tp = tp;
  o.layers = layers;
  o.sequence_parallel = true;
  o.hidden = 32;
  o.seq = 16;
  o.dropout = dropout;
  return loadJobFromText(gen::generateJobText(o), "gen.json");
}

const Op* firstOf(const Program& p, std::string_view canonical) {
  for (const Op& op : p.blocks[0]->ops)
    if (isA(op, opDef(canonical))) return &op;
  return nullptr;
}

std::unique_ptr<Pass> recomputePass(std::initializer_list<std::pair<const char*, OptionValue>> opts) {
  const PassInfo* info = PassRegistry::builtin().find("recompute-activations");
  REQUIRE(info);
  OptionValues v(info->options);
  for (const auto& kv : opts) v.set(kv.first, kv.second);
  return info->create(v);
}

}  // namespace

TEST_CASE("recompute rule: seeded dropout and softmax yes, collectives and unseeded dropout no", "[recompute]") {
  auto job = genGpt(2, 1);
  const Program& p = *job->program(0);
  const Op* dropout = firstOf(p, "dropout");
  REQUIRE(dropout);
  CHECK_FALSE(whyNotRecomputable(*dropout));  // gen writes fix_seed=true
  CHECK_FALSE(whyNotRecomputable(*firstOf(p, "softmax")));
  const Op* allgather = nullptr;
  for (const Op& op : p.blocks[0]->ops)
    if (resolveOp(op.type).def && resolveOp(op.type).def->collective) allgather = allgather ? allgather : &op;
  REQUIRE(allgather);
  REQUIRE(whyNotRecomputable(*allgather));
  CHECK(whyNotRecomputable(*allgather)->code == "collective");
  Op unseeded = *dropout;
  unseeded.attrs.setBool(job->arena, "fix_seed", false);
  REQUIRE(whyNotRecomputable(unseeded));
  CHECK(whyNotRecomputable(unseeded)->code == "random-unseeded");
}

TEST_CASE("op patterns: chains by any spelling, unknown ops are one line of bad input", "[recompute]") {
  auto pats = parseOpPatterns("matmul>scale>softmax>dropout; gelu");
  REQUIRE(pats.size() == 2);
  CHECK(pats[0].size() == 4);
  CHECK(pats[0][0] == &opDef("matmul"));
  CHECK(parseOpPatterns("pd_op.softmax")[0][0] == &opDef("softmax"));
  CHECK_THROWS_WITH(parseOpPatterns("softmax>nope"), "--passes: recompute-activations: ops=softmax>nope: unknown op \"nope\"");
  CHECK_THROWS_AS(parseOpPatterns("softmax;;gelu"), InputError);
  CHECK_THROWS_AS(recomputePass({{"policy", std::string("budget")}}), InputError);
  CHECK_THROWS_AS(recomputePass({{"policy", std::string("list")}}), InputError);
}

TEST_CASE("core-attention frees the softmax output, the dropout mask and the dropout output of every layer", "[recompute]") {
  auto job = genGpt(2, 2);
  ActivationReport before = activationMemory(*job->program(0));
  PassContext ctx;
  REQUIRE(recomputePass({})->run(*job, ctx));
  ActivationReport after = activationMemory(*job->program(0));
  for (const LayerActivations& l : before.layers) {
    if (l.layer.rfind("layer_", 0) != 0) continue;
    // The softmax outputs and the outputs of the dropout that reads one.
    int64_t attention = 0;
    for (const ActivationVar& v : l.vars) {
      const Op* x_writer = nullptr;
      if (const Var* x = isA(*v.producer, opDef("dropout")) ? v.producer->in("X") : nullptr; x && x->writers.size() == 1)
        x_writer = x->writers.front();
      if (isA(*v.producer, opDef("softmax")) || (x_writer && isA(*x_writer, opDef("softmax")))) attention += v.bytes;
    }
    int64_t freed = 0;
    for (const LayerActivations& a : after.layers)
      if (a.layer == l.layer) freed = l.bytes - a.bytes;
    INFO(l.layer);
    CHECK(attention > 0);
    CHECK(freed == attention);
  }
}

TEST_CASE("budget search: greedy never needs fewer FLOPs than exact, and meets no budget exact misses", "[recompute]") {
  for (int64_t tp : {2, 4}) {
    auto job = genGpt(tp, 1);
    Program& p = *job->program(0);
    RankSegments r = findSegments(p, [](const Op&) { return true; }, false, SegmentShape::Budget);
    REQUIRE(r.segments.size() <= 20);
    BudgetChoice lowest = chooseExact(r, 1);
    for (int i = 0; i <= 10; ++i) {
      int64_t budget = r.peak - (r.peak - lowest.peak) * i / 10;
      BudgetChoice g = chooseGreedy(r, budget), e = chooseExact(r, budget);
      INFO("tp " << tp << " budget " << budget);
      CHECK(e.met);
      if (g.met) CHECK(e.flops <= g.flops);
      for (size_t k = 0; k < r.segments.size(); ++k)
        for (size_t c : r.segments[k].conflicts) CHECK_FALSE((e.chosen[k] && e.chosen[c]));
    }
  }
}

TEST_CASE("sub-chains: the connected subsets of a component, in conflict when they overlap or touch", "[recompute]") {
  // 0 - 1 - 2 (a chain: softmax, dropout, context) and 3 alone.
  NodeAdjacency adj{{1}, {0, 2}, {1}, {}};
  auto comps = connectedComponents(adj);
  REQUIRE(comps == std::vector<std::vector<size_t>>{{0, 1, 2}, {3}});
  auto subsets = connectedSubsets(comps[0], adj, 30);
  CHECK(subsets == std::vector<std::vector<size_t>>{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 1, 2}});  // never {0, 2}
  CHECK(connectedSubsets(comps[0], adj, 1).size() == 5);  // the cap, plus the whole
  CHECK(connectedSubsets(comps[1], adj, 30) == std::vector<std::vector<size_t>>{{3}});
  auto conflicts = subsetConflicts(subsets, adj);
  CHECK(conflicts[0] == std::vector<size_t>{1, 3, 4, 5});  // {0}: {1} and {1,2} read it, {0,1} and the whole hold it
  CHECK(conflicts[2] == std::vector<size_t>{1, 3, 4, 5});  // {2}: not {0}
  CHECK(conflicts[3] == std::vector<size_t>{0, 1, 2, 4, 5});
}

TEST_CASE("copy peak: temporaries live from their op to their last reader among the copies", "[recompute]") {
  auto job = loadJobFromText(R"(sp-opt.program text 1
world_size 1
rank 0 fetch=[y] {
  block 0 {
    var x : float32[4]
    var a : float32[4]
    var b : float32[4]
    var y : float32[4]
    {Out=[a]} = scale(X=[x]) {scale=2.0, op_role=0}
    {Out=[b]} = scale(X=[a]) {scale=2.0, op_role=0}
    {Out=[y]} = softmax(X=[b]) {axis=-1, op_role=0}
  }
}
)", "copy.sptxt");
  std::vector<Op*> ops;
  for (Op& op : job->program(0)->blocks[0]->ops) ops.push_back(&op);
  const Var* y = job->program(0)->blocks[0]->lookup("y");
  CHECK(copyPeakBytes(ops, {y}) == 32);  // a and b, then b and y (a freed after b's op)
  CHECK(copyPeakBytes(ops, {}) == 32);
  CHECK(copyPeakBytes({ops[0]}, {}) == 16);
}

TEST_CASE("budget model: one candidate's modelled peak is the rewritten program's profiled peak", "[recompute]") {
  for (int64_t tp : {2, 4}) {
    auto first = genGpt(tp, 2, 0.1);
    RankSegments r0 = findSegments(*first->program(0), [](const Op&) { return true; }, false, SegmentShape::Budget);
    REQUIRE(r0.segments.size() > 4);
    for (size_t k = 0; k < r0.segments.size(); ++k) {
      LiveBytesTree tree(r0.slots);
      applySegmentModel(tree, r0, r0.segments[k], +1);
      auto job = genGpt(tp, 2, 0.1);
      RankSegments r = findSegments(*job->program(0), [](const Op&) { return true; }, false, SegmentShape::Budget);
      REQUIRE(r.segments.size() == r0.segments.size());
      rewriteSegment(r, r.segments[k]);
      INFO("tp " << tp << " segment " << r.segments[k].text);
      CHECK(tree.peak() == profileMemory(*job->program(0), 0).peak_bytes);
    }
  }
}

TEST_CASE("budget reaches core-attention's peak, with fewer FLOPs", "[recompute]") {
  auto core = genGpt(2, 2, 0.1);
  PassContext ctx;
  REQUIRE(recomputePass({})->run(*core, ctx));
  int64_t core_peak = profileMemory(*core->program(0), 0).peak_bytes;
  auto job = genGpt(2, 2, 0.1);
  RankSegments r = findSegments(*job->program(0), [](const Op&) { return true; }, false, SegmentShape::Budget);
  REQUIRE(core_peak < r.peak);
  BudgetChoice g = chooseGreedy(r, core_peak);
  CHECK(g.met);
  PassContext budget_ctx;
  REQUIRE(recomputePass({{"policy", std::string("budget")}, {"budget", int64_t(core_peak)}})->run(*job, budget_ctx));
  CHECK(profileMemory(*job->program(0), 0).peak_bytes <= core_peak);
}
