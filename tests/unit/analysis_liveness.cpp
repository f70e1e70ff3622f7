// Buffer liveness (analysis/liveness.h) against an independent, quadratic reference on generated
// jobs; no-need-buffer slots release a buffer earlier and replay still runs; the memory profile.
#include <catch2/catch.hpp>

#include <cmath>

#include "analysis/liveness.h"
#include "analysis/memory.h"
#include "ops/op_view.h"
#include "gen/generate.h"
#include "io/loader.h"
#include "runtime/executor.h"
#include "runtime/local_backend.h"

using namespace spopt;

namespace {

// The reference: for each var of the entry block, scan every op for its last buffer use.
std::vector<int32_t> referenceDeaths(const Program& p, bool no_need_buffer) {
  const Block& b = *entryBlockOf(p);
  std::vector<int32_t> dies(p.next_var_id, -1);
  for (const auto& v : b.vars) {
    if (v->removed || v->persistable || p.fetches(v->name)) continue;
    int32_t i = 0, last = -1;
    for (const Op& op : b.ops) {
      for (const Slot& s : op.inputs)
        for (const Arg& a : s.args)
          if (a.var == v.get() && (!no_need_buffer || readsBuffer(op, s.name))) last = i;
      for (const Slot& s : op.outputs)
        for (const Arg& a : s.args)
          if (a.var == v.get()) last = i;
      ++i;
    }
    dies[v->id] = last;
  }
  return dies;
}

std::unique_ptr<Job> generated(gen::Model model, int64_t tp, int64_t dp, bool sp) {
  gen::GenOptions o;
  o.model = model;
  o.tp = tp;
  o.dp = dp;
  o.sequence_parallel = sp;
  return loadJobFromText(gen::generateJobText(o), "gen.json");
}

}  // namespace

TEST_CASE("liveness equals the reference on generated jobs, every rank", "[analysis][liveness]") {
  for (auto model : {gen::Model::Mlp, gen::Model::Gpt}) {
    auto job = generated(model, 2, 2, true);
    for (const auto& p : job->programs) {
      for (bool nnb : {true, false}) {
        Liveness l = computeProgramLiveness(*p, LivenessOptions{nnb});
        const BlockLiveness& e = l.entry();
        auto ref = referenceDeaths(*p, nnb);
        size_t listed = 0;
        for (size_t i = 0; i < e.release_after.size(); ++i)
          for (const Var* v : e.release_after[i]) {
            CHECK(ref[v->id] == int32_t(i));
            ++listed;
          }
        size_t expected = 0;
        for (int32_t d : ref) expected += d >= 0;
        CHECK(listed == expected);
        for (size_t id = 0; id < ref.size(); ++id) CHECK(e.dies_after[id] == ref[id]);
        // What replay releases is exactly this (runtime/executor.h).
        auto replay = rt::computeLiveness(*p, LivenessOptions{nnb});
        CHECK(replay.release_after == e.release_after);
      }
    }
  }
}

TEST_CASE("gpt has shape-only reads that end buffers earlier", "[analysis][liveness]") {
  auto job = generated(gen::Model::Gpt, 2, 1, false);
  const Program& p = *job->programs[0];
  auto with = computeProgramLiveness(p).entry();
  auto without = computeProgramLiveness(p, LivenessOptions{false}).entry();
  size_t earlier = 0;
  for (size_t id = 0; id < with.dies_after.size(); ++id) {
    CHECK(with.dies_after[id] <= without.dies_after[id]);
    earlier += with.dies_after[id] < without.dies_after[id];
  }
  CHECK(earlier > 0);
  CHECK(profileMemory(p, computeProgramLiveness(p)).peak_bytes <= profileMemory(p, computeProgramLiveness(p, LivenessOptions{false})).peak_bytes);
}

namespace {
// x -> scale -> a; a, b -> elementwise_add -> c; then two ops that only use c; then
// elementwise_add_grad reads X=a, Y=b shape-only. `a` dies at op 1 (its last real read), not 4.
const char* kLivenessJob = R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],
 "programs":[{"rank":0,"fetch":["da","db"],"blocks":[{"idx":0,"parent_idx":-1,
  "vars":[{"name":"x","shape":[64],"dtype":"float32"},{"name":"b","shape":[64],"dtype":"float32"},
          {"name":"a","shape":[64],"dtype":"float32"},{"name":"c","shape":[64],"dtype":"float32"},
          {"name":"d","shape":[64],"dtype":"float32"},{"name":"g","shape":[64],"dtype":"float32"},
          {"name":"da","shape":[64],"dtype":"float32"},{"name":"db","shape":[64],"dtype":"float32"}],
  "ops":[{"type":"scale","inputs":{"X":["x"]},"outputs":{"Out":["a"]},"attrs":{"scale":2.0,"bias":0.0,"bias_after_scale":true}},
         {"type":"elementwise_add","inputs":{"X":["a"],"Y":["b"]},"outputs":{"Out":["c"]},"attrs":{"axis":-1}},
         {"type":"scale","inputs":{"X":["c"]},"outputs":{"Out":["d"]},"attrs":{"scale":3.0,"bias":0.0,"bias_after_scale":true}},
         {"type":"scale","inputs":{"X":["d"]},"outputs":{"Out":["g"]},"attrs":{"scale":1.0,"bias":0.0,"bias_after_scale":true}},
         {"type":"elementwise_add_grad","inputs":{"X":["a"],"Y":["b"],"Out@GRAD":["g"]},"outputs":{"X@GRAD":["da"],"Y@GRAD":["db"]},"attrs":{"axis":-1}}]}]}]})";
}  // namespace

TEST_CASE("a var read only shape-only after its last real use is released there", "[analysis][liveness]") {
  auto job = loadJobFromText(kLivenessJob, "t.json");
  const Program& p = *job->programs[0];
  const Block& b = *p.blocks[0];
  auto with = computeProgramLiveness(p).entry();
  auto without = computeProgramLiveness(p, LivenessOptions{false}).entry();
  const Var* a = b.lookup("a");
  const Var* bv = b.lookup("b");
  CHECK(with.dies_after[a->id] == 1);
  CHECK(without.dies_after[a->id] == 4);
  CHECK(with.dies_after[bv->id] == 1);  // an input: generated at op 1, its buffer ends there
  CHECK(with.inputs.size() == 2);        // x, b
  CHECK_FALSE(readsBuffer(b.ops.back(), "X"));
  CHECK(readsBuffer(b.ops.back(), "Out@GRAD"));

  // Memory: a and b (256 bytes each) are no longer live at the grad op.
  MemoryProfile m = profileMemory(p, computeProgramLiveness(p));
  MemoryProfile m0 = profileMemory(p, computeProgramLiveness(p, LivenessOptions{false}));
  REQUIRE(m.live_at.size() == 5);
  CHECK(m.live_at[4] == 3 * 256);   // g, da, db
  CHECK(m0.live_at[4] == 5 * 256);  // plus a, b
  CHECK(m.live_at[1] == 3 * 256);   // a, b, c (x died after op 0)
  CHECK(m.peak_bytes == 3 * 256);   // first reached at op 0: x, b, a
  CHECK(m.peak_op == 0);
  CHECK(m0.peak_bytes == 5 * 256);
  CHECK(m.largest_at_peak.size() >= 1);

  // Replay runs with a and b released: the kernel gets their shapes only; dX = dY = dOut.
  auto backend = rt::makeLocalBackend({});
  rt::RankRun out;
  backend->run({0}, [&](int64_t rank, rt::CommFactory& comms) {
    auto comm = comms.make(*job);
    out = rt::executeProgram(*job->program(rank), *comm, rt::ExecOptions{0, "", false});
    return std::string();
  });
  REQUIRE(out.kept.size() == 2);
  CHECK(out.kept[0].first == "da");
  CHECK(out.kept[0].second.numel() == 64);
  double sum = 0;
  for (int64_t i = 0; i < 64; ++i) {
    CHECK(out.kept[0].second.valueAt(i) == out.kept[1].second.valueAt(i));
    sum += std::abs(out.kept[0].second.valueAt(i));
  }
  CHECK(sum > 0);
}

TEST_CASE("peakBytes is the memory profile's peak, without its lists", "[analysis][liveness][memory]") {
  for (auto model : {gen::Model::Mlp, gen::Model::Gpt, gen::Model::Llama})
    for (bool sp : {false, true}) {
      auto job = generated(model, 2, 2, sp);
      for (const auto& p : job->programs)
        for (bool nnb : {true, false}) {
          const int64_t peak = profileMemory(*p, computeProgramLiveness(*p, LivenessOptions{nnb}), 0).peak_bytes;
          CHECK(peak > 0);
          CHECK(peakBytes(*p, LivenessOptions{nnb}) == peak);
        }
    }
}
