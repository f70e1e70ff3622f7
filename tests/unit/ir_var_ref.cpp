// An arg holds its var's id beside the pointer (VarRef), and the walks that need only which var an
// arg names read that id: it must equal the var's own after loading and after every pass, and a
// stale one must be reported by the verifier, not read silently.
#include <catch2/catch.hpp>

#include "gen_jobs.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {
// Each arg whose id differs from its var's, as "program/op type/arg name".
std::vector<std::string> staleArgs(const Job& job) {
  std::vector<std::string> out;
  for (const auto& p : job.programs)
    for (const auto& b : p->blocks)
      for (const Op& op : b->ops)
        for (const std::vector<Slot>* slots : {&op.inputs, &op.outputs})
          for (const Slot& s : *slots)
            for (const Arg& a : s.args)
              if (!a.var || a.var.id() != a.var->id) out.push_back(std::to_string(p->position) + "/" + std::string(op.type) + "/" + std::string(a.name));
  return out;
}
}  // namespace

TEST_CASE("VarRef: assigning the pointer sets the id, null has none", "[ir][var-ref]") {
  Var v;
  v.id = 7;
  VarRef r;
  CHECK(r.id() == VarRef::kNoId);
  CHECK(static_cast<Var*>(r) == nullptr);
  r = &v;
  CHECK(r.id() == 7);
  CHECK(r->id == 7);
  CHECK(static_cast<Var*>(r) == &v);
  r = nullptr;
  CHECK(r.id() == VarRef::kNoId);
}

TEST_CASE("every arg's id is its var's after loading and after the default chain", "[ir][var-ref]") {
  auto job = test::smallGptJob(2);
  CHECK(staleArgs(*job).empty());
  PipelineResult res = runPipeline(parsePipeline(std::string(kDefaultPipeline), PassRegistry::builtin()), *job);
  REQUIRE(res.ok);
  CHECK(staleArgs(*job).empty());
}

TEST_CASE("the verifier reports an arg whose id is not its var's", "[ir][var-ref][verify]") {
  auto job = test::smallGptJob(2);
  REQUIRE(verifyJob(*job).empty());
  // Two vars of one program whose ids differ: the first op's first input is pointed at the other
  // var's object while keeping its own id, as a copy that bypassed VarRef's assignment would.
  Block& entry = *job->programs[0]->blocks.front();
  Op& op = entry.ops.front();
  REQUIRE(!op.inputs.empty());
  REQUIRE(!op.inputs.front().args.empty());
  Arg& arg = op.inputs.front().args.front();
  Var* var = arg.var;
  const uint32_t real_id = var->id;
  var->id = real_id + 1;  // the arg still holds real_id
  auto problems = verifyJob(*job);
  var->id = real_id;
  REQUIRE(!problems.empty());
  CHECK_THAT(problems.front().line(), Catch::Contains("by id " + std::to_string(real_id)));
}
