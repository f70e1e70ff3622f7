// Translation between dialects (ops/translate.h): legacy -> PIR -> legacy is the identity, and
// the PIR form and the legacy form it comes back as both pass the verifier.
#include <catch2/catch.hpp>

#include "gen/generate.h"
#include "io/loader.h"
#include "io/text_writer.h"
#include "io/writer.h"
#include "ops/translate.h"
#include "support/error.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {

std::string problems(const Job& job) {
  std::string lines;
  for (const Diagnostic& d : verifyJob(job)) lines += d.line() + "\n";
  return lines;
}

gen::GenOptions model(gen::Model m, int64_t tp, bool sp) {
  gen::GenOptions o;
  o.model = m;
  o.tp = tp;
  o.sequence_parallel = sp;
  o.layers = 1;
  return o;
}

}  // namespace

TEST_CASE("legacy -> PIR -> legacy gives back the same job", "[ops][translate]") {
  for (gen::GenOptions o : {model(gen::Model::Mlp, 2, false), model(gen::Model::Mlp, 2, true),
                            model(gen::Model::Gpt, 2, true), model(gen::Model::Gpt, 1, false)}) {
    std::string text = gen::generateJobText(o);
    auto original = loadJobFromText(text, "gen.json");
    auto job = loadJobFromText(text, "gen.json");
    translateToPir(*job);
    for (const auto& p : job->programs) CHECK(p->dialect == Dialect::Pir);
    // The PIR job as a file: what export writes and import reads.
    auto pir = loadJobFromText(jobToString(*job), "pir.json");
    CHECK(problems(*pir) == "");
    translateToLegacy(*pir);
    for (const auto& p : pir->programs) CHECK(p->dialect == Dialect::Legacy);
    CHECK(problems(*pir) == "");
    CHECK(jobToText(*pir) == jobToText(*original));
  }
}

TEST_CASE("a PIR op without a legacy spelling is refused by name", "[ops][translate]") {
  std::string text = gen::generateJobText(model(gen::Model::Mlp, 2, false));
  auto job = loadJobFromText(text, "gen.json");
  translateToPir(*job);
  std::string pir = jobToString(*job);
  size_t at = pir.find("\"pd_op.gelu\"");
  REQUIRE(at != std::string::npos);
  pir.replace(at, 12, "\"pd_op.nosuch\"");
  auto broken = loadJobFromText(pir, "broken.json");
  CHECK_THROWS_WITH(translateToLegacy(*broken), Catch::Contains("broken.json") && Catch::Contains("pd_op.nosuch is not in the op catalogue"));
}
