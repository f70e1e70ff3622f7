// recompute-activations: the catalogue's recompute rule, the op-pattern parser, and the budget
// searches (greedy never below the exact optimum, exact never above greedy) on generated jobs.
#include <catch2/catch.hpp>

#include "analysis/activations.h"
#include "gen/generate.h"
#include "io/loader.h"
#include "ops/recompute_rule.h"
#include "passes/recompute_policy.h"
#include "passes/registry.h"
#include "support/error.h"

using namespace spopt;

namespace {

std::unique_ptr<Job> genGpt(int64_t tp, int64_t layers) {
  gen::GenOptions o;
  o.model = gen::Model::Gpt;
  o.tp = tp;
  o.layers = layers;
  o.sequence_parallel = true;
  o.hidden = 32;
  o.seq = 16;
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
    RankSegments r = findSegments(p, [](const Op&) { return true; }, false, false);
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
