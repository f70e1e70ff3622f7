// The Llama block and the shape-op job (testdata/jobs) through the translator: legacy -> PIR ->
// legacy gives back the same job, and the PIR form replays bitwise what the legacy one does —
// stack_grad's several X@GRAD vars becoming one vector result taken apart by builtin.slice.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>

#include "io/loader.h"
#include "io/text_writer.h"
#include "io/writer.h"
#include "ops/translate.h"
#include "runtime/executor.h"
#include "runtime/local_backend.h"
#include "verify/verifier.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

RankRun replayRank0(const Job& job) {
  auto backend = makeLocalBackend({});
  RankRun out;
  backend->run({0}, [&](int64_t rank, CommFactory& comms) {
    auto comm = comms.make(job);
    out = executeProgram(*job.program(rank), *comm, ExecOptions{0, "", true});
    return std::string();
  });
  return out;
}

std::set<std::string> opTypes(const Job& job) {
  std::set<std::string> types;
  for (const Op& op : job.programs[0]->blocks[0]->ops) types.insert(std::string(op.type));
  return types;
}

}  // namespace

TEST_CASE("the Llama and shape-op jobs translate to PIR and back, and replay alike", "[ops][translate]") {
  for (const char* name : {"llama_block.sptxt", "index_ops.sptxt"}) {
    CAPTURE(name);
    std::string path = std::string(SPOPT_SOURCE_DIR) + "/testdata/jobs/" + name;
    auto original = loadJob(path);
    auto job = loadJob(path);
    translateToPir(*job);
    CHECK(verifyJob(*job).empty());
    std::set<std::string> types = opTypes(*job);
    CHECK(types.count("pd_op.rms_norm") + types.count("pd_op.stack_grad") == 1);
    RankRun legacy = replayRank0(*original), pir = replayRank0(*job);
    REQUIRE(legacy.kept.size() == pir.kept.size());
    REQUIRE_FALSE(legacy.kept.empty());
    for (size_t i = 0; i < legacy.kept.size(); ++i) {
      CAPTURE(legacy.kept[i].first);
      CHECK(legacy.kept[i].first == pir.kept[i].first);
      const Tensor &a = legacy.kept[i].second, &b = pir.kept[i].second;
      REQUIRE(a.bytes() == b.bytes());
      CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
    }
    auto back = loadJobFromText(jobToString(*job), "pir.json");
    translateToLegacy(*back);
    CHECK(verifyJob(*back).empty());
    CHECK(jobToText(*back) == jobToText(*original));
  }
}
