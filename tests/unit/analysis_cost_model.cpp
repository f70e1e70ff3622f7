// The cost model and the step simulator: FLOPs by hand, ring bytes, a collective waiting for its
// slowest member, comm on its own stream overlapping compute, and a cycle across rings refused.
#include <catch2/catch.hpp>

#include "analysis/cost_model.h"
#include "analysis/job_report.h"
#include "analysis/machine_model.h"
#include "analysis/simulate.h"
#include "gen/generate.h"
#include "io/loader.h"
#include "support/error.h"

using namespace spopt;

namespace {

// Two ranks; rank 0 does a 64x64x64 matmul before the all-reduce, rank 1 does not.
std::string twoRankJob(bool comm_stream, bool second_matmul) {
  auto var = [](const char* n, const char* shape) {
    return std::string("{\"name\":\"") + n + "\",\"shape\":" + shape + ",\"dtype\":\"float32\",\"persistable\":false}";
  };
  std::string stream = comm_stream ? ",\"dist_attr\":{\"execution_stream\":\"comm\"}" : "";
  auto program = [&](int rank, bool with_matmul) {
    std::string ops;
    if (with_matmul)
      ops += "{\"type\":\"matmul_v2\",\"inputs\":{\"X\":[\"a\"],\"Y\":[\"b\"]},\"outputs\":{\"Out\":[\"c\"]},\"attrs\":{\"op_role\":0}},";
    ops += "{\"type\":\"c_allreduce_sum\",\"inputs\":{\"X\":[\"a\"]},\"outputs\":{\"Out\":[\"d\"]},\"attrs\":{\"ring_id\":0,\"op_role\":1}" +
           stream + "}";
    if (second_matmul)
      ops += ",{\"type\":\"matmul_v2\",\"inputs\":{\"X\":[\"a\"],\"Y\":[\"b\"]},\"outputs\":{\"Out\":[\"e\"]},\"attrs\":{\"op_role\":1}}";
    return "{\"rank\":" + std::to_string(rank) + ",\"blocks\":[{\"idx\":0,\"parent_idx\":-1,\"vars\":[" + var("a", "[64,64]") +
           "," + var("b", "[64,64]") + "," + var("c", "[64,64]") + "," + var("d", "[64,64]") + "," + var("e", "[64,64]") +
           "],\"ops\":[" + ops + "]}]}";
  };
  return "{\"format\":\"sp-opt.program\",\"version\":1,\"world_size\":2,\"process_groups\":[{\"ring_id\":0,\"ranks\":[0,1]}],"
         "\"programs\":[" + program(0, true) + "," + program(1, false) + "]}";
}

HardwareModel simple() {
  HardwareModel m;
  m.name = "test";
  m.setAllFlops(1e9);  // 1 GFLOP/s: a 64^3 matmul (524288 FLOPs) takes 524.288 us
  m.mem_bw = 1e12;
  m.bus_bw = 1e9;
  m.latency_s = 1e-6;
  return m;
}

}  // namespace

TEST_CASE("FLOPs and ring bytes by hand", "[analyze]") {
  auto job = loadJobFromText(twoRankJob(false, false), "t.json");
  const Op& mm = job->programs[0]->blocks[0]->ops.front();
  CHECK(opFlops(mm) == 2.0 * 64 * 64 * 64);
  const Op& ar = job->programs[0]->blocks[0]->ops.back();
  auto w = collectiveWireBytes(ar, *asCollective(ar), *job);
  REQUIRE(w);
  CHECK(w->payload == 64 * 64 * 4);
  CHECK(w->wire == 2 * (2 - 1) * 64 * 64 * 4 / 2);
  CHECK(w->steps == 2);
  // alpha + wire / bus bw
  CHECK(opCostSeconds(ar, simple()) == Approx(1e-6 + 16384 / 1e9));
}

TEST_CASE("a collective starts when its last member arrives", "[analyze]") {
  auto job = loadJobFromText(twoRankJob(false, false), "t.json");
  StepTimeline t = simulateStep(*job, simple());
  double mm = 2.0 * 64 * 64 * 64 / 1e9, ar = 1e-6 + 16384 / 1e9;
  CHECK(t.step_s == Approx(mm + ar));
  REQUIRE(t.ranks.size() == 2);
  // Rank 1 idles on its compute stream until rank 0 arrives: all exposed communication.
  CHECK(t.ranks[1].total.exposed_s == Approx(mm + ar));
  CHECK(t.ranks[0].total.exposed_s == Approx(ar));
  CHECK(t.critical_path.size() == 2);
  CHECK(t.critical_path.front().op->type == "matmul_v2");
}

TEST_CASE("a collective on its own stream overlaps independent compute", "[analyze]") {
  auto job = loadJobFromText(twoRankJob(true, true), "t.json");
  HardwareModel m = simple();
  StepTimeline t = simulateStep(*job, m);
  const RankTimeline& r1 = t.ranks[1];
  REQUIRE(r1.streams.size() == 2);
  CHECK(r1.streams[1].name == "comm");
  // Rank 1's matmul runs at once, while its all-reduce waits for rank 0: nothing is exposed.
  CHECK(r1.streams[0].intervals[0].start == 0);
  CHECK(r1.total.exposed_s == 0);
  CHECK(r1.total.comm_s == Approx(1e-6 + 16384 / 1e9));
}

TEST_CASE("a wait across streams costs the host's wake-up, a wait on the same stream none", "[analyze]") {
  // Both ranks: matmul a,b -> c; all-reduce c -> d (reads the matmul's result); matmul d,b -> e
  // (reads the all-reduce's).
  auto job = [](bool comm_stream) {
    std::string text = twoRankJob(comm_stream, false);
    const std::string mm2 = ",{\"type\":\"matmul_v2\",\"inputs\":{\"X\":[\"d\"],\"Y\":[\"b\"]},\"outputs\":{\"Out\":[\"e\"]},\"attrs\":{\"op_role\":1}}";
    for (size_t at = text.find("]}]}"); at != std::string::npos; at = text.find("]}]}", at + mm2.size() + 4)) text.insert(at, mm2);
    // Rank 1 gets rank 0's first matmul too (reading c), so both reach the all-reduce together.
    const std::string mm1 = "{\"type\":\"matmul_v2\",\"inputs\":{\"X\":[\"a\"],\"Y\":[\"b\"]},\"outputs\":{\"Out\":[\"c\"]},\"attrs\":{\"op_role\":0}},";
    size_t rank1 = text.find("\"rank\":1");
    text.insert(text.find("\"ops\":[", rank1) + 7, mm1);
    const std::string reads_a = "\"inputs\":{\"X\":[\"a\"]},\"outputs\":{\"Out\":[\"d\"]}";
    for (size_t at = text.find(reads_a); at != std::string::npos; at = text.find(reads_a, at)) text[at + 16] = 'c';
    return loadJobFromText(text, "t.json");
  };
  HardwareModel m = simple();
  m.wake_s = 1e-3;
  const double mm = 2.0 * 64 * 64 * 64 / 1e9, ar = 1e-6 + m.wake_s + 16384 / 1e9;
  // One stream: nothing waits across streams; the all-reduce's own cost holds one wake-up.
  CHECK(simulateStep(*job(false), m).step_s == Approx(2 * mm + ar));
  // The all-reduce on its own stream waits for the first matmul, the second matmul for it: each
  // of the two blocked stream threads is woken.
  CHECK(simulateStep(*job(true), m).step_s == Approx(2 * mm + ar + 2 * m.wake_s));
  m.wake_s = 0;  // the GPU presets: streams wait on events
  CHECK(simulateStep(*job(true), m).step_s == Approx(2 * mm + 1e-6 + 16384 / 1e9));
}

TEST_CASE("generated gpt: every rank simulates, backward costs about twice forward", "[analyze]") {
  gen::GenOptions o;
  o.model = gen::Model::Gpt;
  o.tp = 2;
  o.hidden = 256;
  o.heads = 4;
  o.seq = 128;
  o.dtype = DType::BFloat16;
  auto job = loadJobFromText(gen::generateJobText(o), "gpt.json");
  JobReport r = analyzeJob(*job, *presetModel("h100-nvlink"));
  REQUIRE(r.ranks.size() == 2);
  double fwd = r.ranks[0].flops_by_phase[size_t(Phase::Forward)], bwd = r.ranks[0].flops_by_phase[size_t(Phase::Backward)];
  CHECK(bwd / fwd > 1.8);
  CHECK(bwd / fwd < 2.3);
  CHECK(r.timeline.step_s > 0);
  CHECK(r.ranks[0].comm.count > 0);
  CHECK(r.ranks[0].activations.has_backward);
}

TEST_CASE("overrides must be positive", "[analyze]") {
  HardwareModel m = *presetModel("h100-nvlink");
  ModelOverrides o;
  o.bus_bw = -1;
  CHECK_THROWS_AS(applyOverrides(m, o), std::invalid_argument);
  o.bus_bw = 100e9;
  applyOverrides(m, o);
  CHECK(m.bus_bw == 100e9);
  CHECK_FALSE(presetModel("no-such"));
}

TEST_CASE("collectives whose issue orders cross between rings are refused, not hung", "[analyze]") {
  // Both ranks are on rings 0 and 1; rank 0 issues ring 0 first, rank 1 ring 1 first, on one stream.
  auto program = [](int rank, int first, int second) {
    auto ar = [](int ring, const char* in, const char* out) {
      return std::string("{\"type\":\"c_allreduce_sum\",\"inputs\":{\"X\":[\"") + in + "\"]},\"outputs\":{\"Out\":[\"" + out +
             "\"]},\"attrs\":{\"ring_id\":" + std::to_string(ring) + ",\"op_role\":1}}";
    };
    return "{\"rank\":" + std::to_string(rank) +
           ",\"blocks\":[{\"idx\":0,\"parent_idx\":-1,\"vars\":[{\"name\":\"a\",\"shape\":[4],\"dtype\":\"float32\"},"
           "{\"name\":\"b\",\"shape\":[4],\"dtype\":\"float32\"},{\"name\":\"c\",\"shape\":[4],\"dtype\":\"float32\"}],"
           "\"ops\":[" + ar(first, "a", "b") + "," + ar(second, "a", "c") + "]}]}";
  };
  auto jobText = [](const std::string& rank0, const std::string& rank1) {
    return "{\"format\":\"sp-opt.program\",\"version\":1,\"world_size\":2,\"process_groups\":[{\"ring_id\":0,\"ranks\":[0,1]},"
           "{\"ring_id\":1,\"ranks\":[0,1]}],\"programs\":[" + rank0 + "," + rank1 + "]}";
  };
  std::string text = jobText(program(0, 0, 1), program(1, 1, 0));
  auto job = loadJobFromText(text, "cross.json");
  std::string simulated;
  try {
    simulateStep(*job, simple());
    FAIL("no error");
  } catch (const InputError& e) {
    simulated = e.diagnostic().line();
    INFO(simulated);
    CHECK(simulated.find("cross.json: /programs/") == 0);
    CHECK(simulated.find("form a cycle") != std::string::npos);
  }
  // The check without timing (a pass's proof that its orders cannot hang) says the same.
  HardwareModel m = simple();
  OpFactsCache facts(m);
  try {
    checkSchedulable(*job, facts);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.diagnostic().line() == simulated);
  }
  // Ring 0 first on both ranks: schedulable.
  auto ordered = loadJobFromText(jobText(program(0, 0, 1), program(1, 0, 1)), "ordered.json");
  OpFactsCache ordered_facts(m);
  CHECK_NOTHROW(checkSchedulable(*ordered, ordered_facts));
}

TEST_CASE("the link's spelling, and a model with the link replay emulates", "[analyze]") {
  LinkSpec l;
  CHECK(parseLinkSpec("0.02,100", l).empty());
  CHECK(l.gbps == 0.02);
  CHECK(l.latency_us == 100);
  CHECK(parseLinkSpec("5", l).empty());
  CHECK((l.gbps == 5 && l.latency_us == 0));
  CHECK(parseLinkSpec("", l).empty());
  CHECK_FALSE(l.on());
  CHECK(parseLinkSpec("0", l) == "BW_GBPS must be > 0");
  CHECK(parseLinkSpec("x,1", l) == "BW_GBPS must be a number >= 0");
  CHECK(parseLinkSpec("1,-1", l) == "LATENCY_US must be a number >= 0");
  CHECK(parseLinkSpec("1,2,3", l) == "LATENCY_US must be a number >= 0");

  HardwareModel m = machineModel("h100-nvlink", LinkSpec{0.05, 100}, 2, "--preset");
  CHECK(m.bus_bw == Approx(0.05e9));
  CHECK(m.latency_s == Approx(100e-6));
  CHECK(m.step_latency_s == 0);
  CHECK(m.name == "h100-nvlink + link 0.05,100");
  CHECK(machineModel("h100-nvlink", LinkSpec{}, 2, "--preset").bus_bw == presetModel("h100-nvlink")->bus_bw);
  CHECK_THROWS_WITH(machineModel("tpu", LinkSpec{}, 2, "--preset"), Catch::Contains("--preset: unknown preset \"tpu\""));
}

TEST_CASE("preset host: measured once per rank count through the registered measurer", "[analyze]") {
  int calls = 0;
  setHostMeasurer([&](int ranks) {
    ++calls;
    HostMeasurement h;
    h.sgemm_flops = 1e10 * ranks;
    h.sgemm_curve = {{64, 5e9}, {512, 1e10}};
    h.copy_bw = 2e10;
    h.ranks = ranks;
    return h;
  });
  HardwareModel a = machineModel("host", LinkSpec{0.02, 100}, 2, "--passes");
  HardwareModel b = machineModel("host", LinkSpec{}, 2, "--passes");
  CHECK(calls == 1);
  CHECK(a.bus_bw == Approx(0.02e9));
  CHECK(b.bus_bw == Approx(2e10));  // the local backend's copies
  CHECK(a.flopsFor(DType::Float32) == Approx(2e10));
  machineModel("host", LinkSpec{}, 4, "--passes");
  CHECK(calls == 2);
  setHostMeasurer(nullptr);
  CHECK_THROWS_WITH(machineModel("host", LinkSpec{}, 2, "--passes"), Catch::Contains("preset host needs a measurement"));
}
