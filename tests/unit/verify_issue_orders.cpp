// The issue orders the verifier keeps between passes (verifier.h IssueOrders) must be what a walk of
// every program finds: the check after a journaled pass compares the rings by them alone. Each
// pipeline runs with its orders seeded by the job's own check, and after every pass the kept
// lists are compared with collectivesByRing and freshly read signatures.
#include <catch2/catch.hpp>

#include "analysis/collectives.h"
#include "gen_jobs.h"
#include "io/loader.h"
#include "io/text_reader.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "verify/issue_orders.h"

using namespace spopt;

namespace {


// Each way the kept orders differ from the job's walk, as a line.
std::vector<std::string> differences(const IssueOrders& kept, const Job& job) {
  std::vector<std::string> out;
  if (!kept.state) return {"no orders kept"};
  for (const auto& p : job.programs) {
    const std::string rank = "rank " + std::to_string(p->rank) + ": ";
    const auto walked = collectivesByRing(*p);
    const auto& lists = kept.state->rings[p->position];
    if (lists.size() != walked.size()) out.push_back(rank + std::to_string(lists.size()) + " rings kept, " + std::to_string(walked.size()) + " walked");
    for (const auto& [ring, ops] : walked) {
      auto it = lists.find(ring);
      if (it == lists.end()) {
        out.push_back(rank + "ring " + std::to_string(ring) + " not kept");
        continue;
      }
      if (it->second.size() != ops.size()) {
        out.push_back(rank + "ring " + std::to_string(ring) + ": " + std::to_string(it->second.size()) + " kept, " + std::to_string(ops.size()) + " walked");
        continue;
      }
      for (size_t k = 0; k < ops.size(); ++k) {
        const IssuedCollective& have = it->second[k];
        const IssuedCollective fresh(*ops[k], *asCollective(*ops[k]));
        if (have.op != ops[k] || have.numel != fresh.numel || have.dtype != fresh.dtype || have.c.kind != fresh.c.kind)
          out.push_back(rank + "ring " + std::to_string(ring) + " #" + std::to_string(k) + " differs");
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the issue orders kept between passes are every program's walk after each pass", "[verify][passes]") {
  struct Case {
    std::string pipeline;
    int64_t tp;
  };
  const std::vector<Case> cases = {
      {"fuse-allreduce-split,regather-activations,overlap-collectives", 2},
      {"fuse-allreduce-split,regather-activations,overlap-collectives", 4},
      {"fuse-allreduce-split,decompose-collective-matmul{mode=always,phases=all},overlap-collectives", 4},
      {"fuse-allreduce-split,decompose-collective-matmul{mode=always},regather-activations,overlap-collectives{preset=a100-nvlink}", 2},
      {"split-matmul-grad,fuse-allreduce-split,recompute-activations", 2},
  };
  for (const Case& c : cases) {
    INFO(c.pipeline << ", tp " << c.tp);
    auto job = spopt::test::smallGptJob(c.tp);
    IssueOrders orders;
    REQUIRE(verifyJob(*job, {.issue_orders = &orders}).empty());
    CHECK(differences(orders, *job).empty());
    PassManagerOptions pm;
    pm.issue_orders = &orders;
    size_t checked = 0;
    pm.after_pass = [&](const std::string& pass, const Job& j) {
      INFO("after " << pass);
      CHECK(differences(orders, j) == std::vector<std::string>{});
      ++checked;
    };
    PipelineResult r = runPipeline(parsePipeline(c.pipeline, PassRegistry::builtin()), *job, pm);
    CHECK(r.ok);
    CHECK(checked == r.runs.size());
  }
}

TEST_CASE("a ring a pass desynchronises is caught with the kept orders, which are then dropped", "[verify][passes]") {
  // Rank 1's all-reduce is not fusable (the golden case fuse-broken-invariant-exit3): fusing by
  // each rank's own checks leaves it issuing an all-reduce where rank 0 issues a reduce-scatter.
  auto job = loadJob(std::string(SPOPT_SOURCE_DIR) + "/testdata/golden/fuse-broken-invariant-exit3/in.json");
  IssueOrders orders;
  REQUIRE(verifyJob(*job, {.issue_orders = &orders}).empty());
  REQUIRE(orders.state);
  PassManagerOptions pm;
  pm.issue_orders = &orders;
  PipelineResult r = runPipeline(parsePipeline("fuse-allreduce-split{unsafe-skip-agreement=true}", PassRegistry::builtin()), *job, pm);
  CHECK_FALSE(r.ok);
  REQUIRE_FALSE(r.problems.empty());
  CHECK(r.problems.front().message.find("ring 0 collective #0 differs: rank 0 issues c_reducescatter") != std::string::npos);
  CHECK_FALSE(orders.state);
}

namespace {

// Two ranks, each issuing a then b on ring 0.
std::unique_ptr<Job> twoCollectives() {
  std::string rank_text =
      "  block 0 parent=-1 {\n"
      "    var x : float32[4]\n    var y : float32[2]\n    var a : float32[4]\n    var b : float32[2]\n"
      "    {Out=[a]} = c_allreduce_sum(X=[x]) {ring_id=0, op_role=1}\n"
      "    {Out=[b]} = c_allreduce_sum(X=[y]) {ring_id=0, op_role=1}\n"
      "  }\n";
  return readTextJob("sp-opt.program text 1\nworld_size 2\ngroup ring_id=0 ranks=[0,1]\nrank 0 {\n" + rank_text + "}\nrank 1 {\n" +
                         rank_text + "}\n",
                     "two.sptxt");
}

// Moves each listed rank's second op before its first, journaled; then checks as the pass
// manager does.
std::vector<Diagnostic> swapAndCheck(Job& job, IssueOrders& orders, const std::vector<int64_t>& ranks) {
  EditJournal journal;
  job.journal = &journal;
  for (int64_t rank : ranks) {
    Block& b = *job.program(rank)->blocks[0];
    b.moveOp(&*std::next(b.ops.begin()), b.ops.begin());
  }
  job.journal = nullptr;
  return verifyJob(job, {.touched = &journal, .issue_orders = &orders});
}

}  // namespace

TEST_CASE("kept issue orders follow collectives a pass moves on every rank", "[verify]") {
  auto job = twoCollectives();
  IssueOrders orders;
  REQUIRE(verifyJob(*job, {.issue_orders = &orders}).empty());
  CHECK(swapAndCheck(*job, orders, {0, 1}).empty());
  CHECK(differences(orders, *job) == std::vector<std::string>{});
  REQUIRE(orders.state);
  CHECK(orders.state->rings[0].at(0).front().numel == 2);  // b, issued first now
}

TEST_CASE("kept issue orders catch collectives a pass moves on one rank only", "[verify]") {
  auto job = twoCollectives();
  IssueOrders orders;
  REQUIRE(verifyJob(*job, {.issue_orders = &orders}).empty());
  std::vector<Diagnostic> problems = swapAndCheck(*job, orders, {0});
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].message.find("ring 0 collective #0 differs: rank 0 issues c_allreduce_sum float32[2]") != std::string::npos);
  CHECK_FALSE(orders.state);
}
