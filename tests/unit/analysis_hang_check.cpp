// The hang check (analysis/hang_check.h) on hand-made jobs: crossed rings named op by op, the same
// rings on their own streams accepted, events that order nothing reported as lost dependencies, a
// sub-block's collective placed at its owning op; the gates (analysis/gates.h); meshes across ranks.
#include <catch2/catch.hpp>

#include "analysis/gates.h"
#include "analysis/hang_check.h"
#include "io/loader.h"
#include "support/error.h"
#include "verify/verifier.h"
#include "views/check_report.h"

using namespace spopt;

namespace {

std::string allreduce(int ring, const char* out, const char* stream = "default", const char* record = "", const char* wait = "") {
  std::string da = std::string("{\"execution_stream\":\"") + stream + "\"";
  if (*record) da += std::string(",\"event_to_record\":\"") + record + "\"";
  if (*wait) da += std::string(",\"events_to_wait\":[\"") + wait + "\"]";
  return "{\"type\":\"c_allreduce_sum\",\"inputs\":{\"X\":[\"x\"]},\"outputs\":{\"Out\":[\"" + std::string(out) +
         "\"]},\"attrs\":{\"ring_id\":" + std::to_string(ring) + ",\"op_role\":1},\"dist_attr\":" + da + "}}";
}

std::string twoRanks(const std::string& ops0, const std::string& ops1, const std::string& extra_block0 = "") {
  auto program = [&](int rank, const std::string& ops, const std::string& extra) {
    return "{\"rank\":" + std::to_string(rank) +
           ",\"blocks\":[{\"idx\":0,\"parent_idx\":-1,\"vars\":[{\"name\":\"x\",\"shape\":[4],\"dtype\":\"float32\"},"
           "{\"name\":\"a\",\"shape\":[4],\"dtype\":\"float32\"},{\"name\":\"b\",\"shape\":[4],\"dtype\":\"float32\"}],\"ops\":[" +
           ops + "]}" + extra + "]}";
  };
  return "{\"format\":\"sp-opt.program\",\"version\":1,\"world_size\":2,\"process_groups\":[{\"ring_id\":0,\"ranks\":[0,1]},"
         "{\"ring_id\":1,\"ranks\":[0,1]}],\"programs\":[" + program(0, ops0, extra_block0) + "," + program(1, ops1, "") + "]}";
}

}  // namespace

TEST_CASE("crossed rings: one error naming every rank, stream and op of the cycle", "[hang]") {
  auto job = loadJobFromText(twoRanks(allreduce(0, "a") + "," + allreduce(1, "b"), allreduce(1, "b") + "," + allreduce(0, "a")), "x.json");
  HangReport r = checkHangs(*job);
  REQUIRE(r.errors.size() == 1);
  const std::string& m = r.errors[0].message;
  INFO(m);
  CHECK(r.errors[0].pointer == "/programs/0/blocks/0/ops/0");
  CHECK(m.find("4 ops on 2 rank(s) form a cycle") != std::string::npos);
  for (const char* op : {"/programs/0/blocks/0/ops/0", "/programs/0/blocks/0/ops/1", "/programs/1/blocks/0/ops/0", "/programs/1/blocks/0/ops/1"})
    CHECK(m.find(op) != std::string::npos);
  CHECK(m.find("rank 0 stream 'default' c_allreduce_sum ring 0 #0") == m.find("cycle of waits: ") + 16);
  CHECK(m.find("waits for its peer") != std::string::npos);
  CHECK(m.find("waits in stream order for") != std::string::npos);
}

TEST_CASE("crossed rings on their own streams do not hang", "[hang]") {
  auto job = loadJobFromText(twoRanks(allreduce(0, "a", "s0") + "," + allreduce(1, "b", "s1"),
                                      allreduce(1, "b", "s1") + "," + allreduce(0, "a", "s0")), "x.json");
  HangReport r = checkHangs(*job);
  CHECK(r.errors.empty());
  CHECK(r.warnings.empty());
  CHECK(r.nodes == 4);
}

TEST_CASE("events recorded later or never order nothing: lost dependencies, not hangs", "[hang]") {
  auto job = loadJobFromText(twoRanks(allreduce(0, "a", "comm", "", "late") + "," + allreduce(1, "b", "default", "late"),
                                      allreduce(0, "a", "comm", "", "never") + "," + allreduce(1, "b")), "x.json");
  HangReport r = checkHangs(*job);
  CHECK(r.errors.empty());
  REQUIRE(r.warnings.size() == 2);
  CHECK(r.warnings[0].pointer == "/programs/0/blocks/0/ops/0");
  CHECK(r.warnings[0].message.find("event 'late', recorded only later in program order, by rank 0 stream 'default' c_allreduce_sum ring 1 #0") != std::string::npos);
  CHECK(r.warnings[1].message.find("event 'never', which no op of the rank records") != std::string::npos);
}

TEST_CASE("two streams waiting on each other's events across ranks hang", "[hang]") {
  auto job = loadJobFromText(twoRanks(allreduce(0, "a", "s0", "e0") + "," + allreduce(1, "b", "s1", "", "e0"),
                                      allreduce(1, "b", "s1", "e1") + "," + allreduce(0, "a", "s0", "", "e1")), "x.json");
  HangReport r = checkHangs(*job);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message.find("waits for event 'e0' recorded by") != std::string::npos);
}

TEST_CASE("a sub-block's collectives run at their owning op", "[hang]") {
  std::string owner = "{\"type\":\"conditional_block\",\"inputs\":{\"Cond\":[\"x\"]},\"outputs\":{\"Out\":[\"b\"]},\"attrs\":{\"sub_block\":1}}";
  std::string sub = ",{\"idx\":1,\"parent_idx\":0,\"vars\":[],\"ops\":[" + allreduce(1, "b") + "]}";
  auto crossed = loadJobFromText(twoRanks(owner + "," + allreduce(0, "a"), allreduce(0, "a") + "," + allreduce(1, "b"), sub), "x.json");
  HangReport r = checkHangs(*crossed);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message.find("/programs/0/blocks/1/ops/0") != std::string::npos);
  auto straight = loadJobFromText(twoRanks(allreduce(0, "a") + "," + owner, allreduce(0, "a") + "," + allreduce(1, "b"), sub), "x.json");
  CHECK(checkHangs(*straight).errors.empty());
}

TEST_CASE("a collective whose peer never issues it waits forever", "[hang]") {
  auto job = loadJobFromText(twoRanks(allreduce(0, "a") + "," + allreduce(0, "b"), allreduce(0, "a")), "x.json");
  HangReport r = checkHangs(*job);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].message.find("has no partner on rank(s) 1") != std::string::npos);
}

TEST_CASE("budgets: units, bad values named by their JSON pointer", "[gates]") {
  Budgets b = parseBudgets("b.json", R"({"peak_memory": "1.5 GiB", "exposed_comm": "250 us", "step_time": 0.002, "max_regression": "5%"})");
  CHECK(*b.limit[size_t(Figure::PeakMemory)] == Approx(1.5 * 1073741824.0));
  CHECK(*b.limit[size_t(Figure::ExposedComm)] == Approx(250e-6));
  CHECK(*b.limit[size_t(Figure::StepTime)] == Approx(0.002));
  CHECK(*b.max_regression == Approx(0.05));
  try {
    parseBudgets("b.json", R"({"peak_memory": "3 parsecs"})");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.diagnostic().line().find("b.json: /peak_memory: \"3 parsecs\": unknown unit \"parsecs\"") == 0);
  }
  CHECK_THROWS_AS(parseBudgets("b.json", R"({"peak_memroy": 1})"), InputError);
}

TEST_CASE("gates: a breach names the figure, the rank and both values", "[gates]") {
  JobFigures now, base;
  now.simulated = base.simulated = true;
  now.step_time = 0.010, base.step_time = 0.010;
  now.ranks = {{0, {2048, 0, 2e-3, 0.01}}, {1, {1024, 0, 1e-3, 0.01}}};
  base.ranks = {{0, {1024, 0, 1e-3, 0.01}}, {1, {1024, 0, 1e-3, 0.01}}};
  Budgets b;
  b.limit[size_t(Figure::PeakMemory)] = 1536;
  b.max_regression = 0.05;
  auto gates = evaluateGates(now, b, &base);
  std::vector<std::string> breaches;
  for (const GateResult& g : gates)
    if (g.breached) breaches.push_back(g.message);
  REQUIRE(breaches.size() == 3);
  CHECK(breaches[0] == "peak_memory rank 0: 2.00 KiB over the budget 1.50 KiB");
  CHECK(breaches[1] == "peak_memory rank 0: 2.00 KiB, baseline 1.00 KiB (+100.0%, over the 5% allowed regression)");
  CHECK(breaches[2] == "exposed_comm rank 0: 2.000 ms, baseline 1.000 ms (+100.0%, over the 5% allowed regression)");
}

TEST_CASE("junit and github renderings escape what their syntax reserves", "[gates]") {
  CheckSuite s{"a&b.json", {}};
  CheckCase c;
  c.name = "budget <x>";
  c.status = CheckCase::Failed;
  c.failures.push_back({"a&b.json", "", "50% \"over\"\nnext: line, more"});
  s.cases.push_back(c);
  std::string junit = renderChecksJunit({s});
  CHECK(junit.find("<testsuite name=\"a&amp;b.json\" id=\"0\" tests=\"1\" failures=\"1\"") != std::string::npos);
  CHECK(junit.find("<testcase name=\"budget &lt;x&gt;\"") != std::string::npos);
  CHECK(junit.find("&quot;over&quot;") != std::string::npos);
  std::string gh = renderChecksGithub({s});
  CHECK(gh.find("::error file=a&b.json,title=sp-opt budget <x>::50%25 \"over\"%0Anext: line, more\n") == 0);
}

TEST_CASE("a var sharded over different meshes on two ranks is refused", "[verify]") {
  auto program = [](int rank, const char* ids) {
    return "{\"rank\":" + std::to_string(rank) +
           ",\"blocks\":[{\"idx\":0,\"parent_idx\":-1,\"vars\":[{\"name\":\"w\",\"shape\":[4,4],\"dtype\":\"float32\",\"dist_attr\":"
           "{\"process_mesh\":{\"shape\":[2],\"process_ids\":" + std::string(ids) + "},\"dims_mapping\":[0,-1]}}],\"ops\":[]}]}";
  };
  auto job = [&](const char* ids1) {
    return loadJobFromText("{\"format\":\"sp-opt.program\",\"version\":1,\"world_size\":3,\"programs\":[" + program(0, "[0,1]") + "," +
                               program(1, ids1) + "]}", "m.json");
  };
  CHECK(verifyJob(*job("[0,1]")).empty());
  auto problems = verifyJob(*job("[1,2]"));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].line() ==
        "m.json: /programs/1/blocks/0/vars/0/dist_attr: var \"w\" is one tensor sharded differently across ranks: rank 0 has mesh [2] "
        "of processes [0,1], dims_mapping [0,-1], global shape [8,4], rank 1 has mesh [2] of processes [1,2], dims_mapping [0,-1], global shape [8,4]");
}
