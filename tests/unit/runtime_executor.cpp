// The executor: liveness from def-use (buffers die after their last use, fetched and persistable
// vars live on), inputs, and bad-input errors naming op, rank, block and index.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

#include "io/loader.h"
#include "runtime/inputs.h"
#include "runtime/executor.h"
#include "runtime/local_backend.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

// A chain x -> s1 -> ... -> sN of `scale` ops on one rank; every var [256] float32.
std::string chainJob(int n, const std::string& fetch) {
  std::string vars = R"({"name":"x","shape":[256],"dtype":"float32"},{"name":"p","shape":[4],"dtype":"float32","persistable":true})";
  std::string ops;
  for (int i = 1; i <= n; ++i) {
    std::string in = i == 1 ? "x" : "s" + std::to_string(i - 1), out = "s" + std::to_string(i);
    vars += R"(,{"name":")" + out + R"(","shape":[256],"dtype":"float32"})";
    ops += std::string(i > 1 ? "," : "") + R"({"type":"scale","inputs":{"X":[")" + in + R"("]},"outputs":{"Out":[")" + out +
           R"("]},"attrs":{"scale":2.0,"bias":0.0,"bias_after_scale":true}})";
  }
  return R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,"fetch":[")" + fetch +
         R"("],"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" + vars + R"(],"ops":[)" + ops + "]}]}]}";
}

RankRun runOne(const Job& job, uint64_t seed = 0) {
  auto backend = makeLocalBackend({});
  RankRun out;
  backend->run({0}, [&](int64_t rank, CommFactory& comms) {
    auto comm = comms.make(job);
    out = executeProgram(*job.program(rank), *comm, ExecOptions{seed, "", true});
    return std::string();
  });
  return out;
}

}  // namespace

TEST_CASE("liveness releases each var after its last use", "[runtime][executor]") {
  auto job = loadJobFromText(chainJob(20, "s20"), "t.json");
  BlockLiveness l = computeLiveness(*job->programs[0]);
  REQUIRE(l.release_after.size() == 20);
  REQUIRE(l.inputs.size() == 1);
  CHECK(l.inputs[0]->name == "x");
  CHECK(l.release_after[0].size() == 1);  // x dies after op 0 (s1 lives on: op 1 reads it)
  CHECK(l.release_after[0][0]->name == "x");
  for (int i = 1; i < 20; ++i) {  // s20 is fetched: it lives to the end
    REQUIRE(l.release_after[size_t(i)].size() == 1);
    CHECK(l.release_after[size_t(i)][0]->name == "s" + std::to_string(i));
  }

  RankRun run = runOne(*job);
  // At most the op's input, its output, the fetched var and the persistable var at once: far
  // below the 21 buffers of [256] floats a no-release executor would hold.
  CHECK(run.peak_bytes <= 2 * 1024 + 16);
  REQUIRE(run.kept.size() == 2);  // s20 (fetched), then p (persistable, never used: its input value)
  CHECK(run.kept[0].first == "s20");
  CHECK(run.kept[1].first == "p");
  CHECK(run.events.size() == 20);
}

TEST_CASE("executor computes the chain and is deterministic in the seed", "[runtime][executor]") {
  auto job = loadJobFromText(chainJob(3, "s3"), "t.json");
  RankRun a = runOne(*job, 5), b = runOne(*job, 5), c = runOne(*job, 6);
  const Tensor& s3 = a.kept[0].second;
  Tensor x = fillInput(*job->programs[0]->blocks[0]->lookup("x"), 0, 5);
  for (int64_t i = 0; i < 256; ++i) REQUIRE(s3.data<float>()[i] == x.data<float>()[i] * 8.0f);
  CHECK(std::memcmp(s3.raw(), b.kept[0].second.raw(), s3.bytes()) == 0);
  CHECK(std::memcmp(s3.raw(), c.kept[0].second.raw(), s3.bytes()) != 0);
}

TEST_CASE("unsupported ops and unknown dims are bad input naming op, rank, block and index", "[runtime][executor]") {
  std::string text = chainJob(3, "s3");
  auto unsupported = loadJobFromText(std::string(text).replace(text.rfind("\"type\":\"scale\""), 14, "\"type\":\"frobnicate\""), "t.json");
  CHECK_THROWS_WITH(checkReplayable(*unsupported->programs[0]),
                    "t.json: /programs/0/blocks/0/ops/2: op 'frobnicate' (rank 0, block 0, op 2): replay does not support this op");
  auto unknown = loadJobFromText(std::string(text).replace(text.find("\"name\":\"s1\",\"shape\":[256]"), 25, "\"name\":\"s1\",\"shape\":[-1]"), "t.json");
  CHECK_THROWS_WITH(checkReplayable(*unknown->programs[0]), Catch::Contains("/ops/0: op 'scale' (rank 0, block 0, op 0): var \"s1\" has an unknown (-1) dim"));
}

TEST_CASE("the executor rounds what float16 / bfloat16 vars store: kernel and collective results, inputs", "[runtime][executor][half]") {
  // Rank r fills a with value[r]; the bfloat16 all-reduce sums 1 + 2^-8 in float32 and rounds it
  // (a tie) to 1; scale's 1 + 0.01 rounds to bfloat16's 1 + 2^-7; 70000 overflows float16.
  auto program = [](int rank, const char* value) {
    return std::string(R"({"rank":)") + std::to_string(rank) + R"(,"fetch":["s","t","h","x"],"blocks":[{"idx":0,"parent_idx":-1,"vars":[
      {"name":"a","shape":[1],"dtype":"bfloat16"},{"name":"s","shape":[1],"dtype":"bfloat16"},{"name":"t","shape":[1],"dtype":"bfloat16"},
      {"name":"h","shape":[1],"dtype":"float16"},{"name":"x","shape":[64],"dtype":"bfloat16","persistable":true}],"ops":[
      {"type":"fill_constant","inputs":{},"outputs":{"Out":["a"]},"attrs":{"shape":[1],"value":)" + value + R"(,"dtype":22}},
      {"type":"c_allreduce_sum","inputs":{"X":["a"]},"outputs":{"Out":["s"]},"attrs":{"ring_id":0}},
      {"type":"scale","inputs":{"X":["s"]},"outputs":{"Out":["t"]},"attrs":{"scale":1.0,"bias":0.01,"bias_after_scale":true}},
      {"type":"fill_constant","inputs":{},"outputs":{"Out":["h"]},"attrs":{"shape":[1],"value":70000.0,"dtype":4}}]}]})";
  };
  auto job = loadJobFromText(R"({"format":"sp-opt.program","version":1,"world_size":2,"process_groups":[{"ring_id":0,"ranks":[0,1]}],"programs":[)" +
                                 program(0, "1.0") + "," + program(1, "0.00390625") + "]}",
                             "half.json");
  auto backend = makeLocalBackend({});
  std::map<int64_t, RankRun> runs;
  std::mutex mu;
  backend->run({0, 1}, [&](int64_t rank, CommFactory& comms) {
    auto comm = comms.make(*job);
    RankRun r = executeProgram(*job->program(rank), *comm, ExecOptions{0, "", true});
    std::lock_guard lk(mu);
    runs[rank] = std::move(r);
    return std::string();
  });
  for (int64_t rank : {0, 1}) {
    std::map<std::string, Tensor> kept;
    for (auto& [name, t] : runs.at(rank).kept) kept[name] = t;
    CHECK(kept.at("s").valueAt(0) == 1.0);
    CHECK(kept.at("t").valueAt(0) == 1.0 + 1.0 / 128);
    CHECK(std::isinf(kept.at("h").valueAt(0)));
    const Tensor& x = kept.at("x");  // a generated input no op touches: bfloat16 values (low 16 bits clear)
    bool nonzero = false;
    for (int64_t i = 0; i < x.numel(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, x.data<float>() + i, 4);
      CHECK((bits & 0xffffu) == 0);
      nonzero = nonzero || x.data<float>()[i] != 0;
    }
    CHECK(nonzero);
  }
}
