// The pass manager: order, statistics, verification after each pass, and stopping at the first
// pass that breaks an invariant.
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "io/writer.h"
#include "passes/pass_manager.h"

using namespace spopt;

namespace {

const char* kManagerJob = R"({"format":"sp-opt.program","version":1,"world_size":2,
 "process_groups":[{"ring_id":0,"ranks":[0,1]}],
 "programs":[
  {"rank":0,"fetch":["z"],"blocks":[{"idx":0,"parent_idx":-1,
   "vars":[{"name":"y","shape":[4,2],"dtype":"float32"},{"name":"y_sum","shape":[4,2],"dtype":"float32"},
           {"name":"y_0","shape":[2,2],"dtype":"float32"},{"name":"y_1","shape":[2,2],"dtype":"float32"},
           {"name":"z","shape":[2,2],"dtype":"float32"}],
   "ops":[{"type":"c_allreduce_sum","inputs":{"X":["y"]},"outputs":{"Out":["y_sum"]},"attrs":{"ring_id":0}},
          {"type":"split","inputs":{"X":["y_sum"]},"outputs":{"Out":["y_0","y_1"]},"attrs":{"axis":0,"num":2}},
          {"type":"relu","inputs":{"X":["y_0"]},"outputs":{"Out":["z"]},"attrs":{}}]}]},
  {"rank":1,"fetch":["z"],"blocks":[{"idx":0,"parent_idx":-1,
   "vars":[{"name":"y","shape":[4,2],"dtype":"float32"},{"name":"y_sum","shape":[4,2],"dtype":"float32"},
           {"name":"y_0","shape":[2,2],"dtype":"float32"},{"name":"y_1","shape":[2,2],"dtype":"float32"},
           {"name":"z","shape":[2,2],"dtype":"float32"}],
   "ops":[{"type":"c_allreduce_sum","inputs":{"X":["y"]},"outputs":{"Out":["y_sum"]},"attrs":{"ring_id":0}},
          {"type":"split","inputs":{"X":["y_sum"]},"outputs":{"Out":["y_0","y_1"]},"attrs":{"axis":0,"num":2}},
          {"type":"relu","inputs":{"X":["y_1"]},"outputs":{"Out":["z"]},"attrs":{}}]}]}]})";

std::vector<std::string>* g_log = nullptr;

// Records its name when run.
class LogPass : public Pass {
 public:
  explicit LogPass(std::string tag) : tag_(std::move(tag)) {}
  bool run(Job&, PassContext& ctx) override {
    if (g_log) g_log->push_back(tag_);
    ctx.countCandidate();
    ctx.refuse({0, 0, 0, "relu", false, "because", "a reason"});
    return false;
  }

 private:
  std::string tag_;
};

// Desynchronises ring 0: rank 1 issues one collective more than rank 0, which the verifier
// must catch.
class BreakPass : public Pass {
 public:
  bool run(Job& job, PassContext&) override {
    Block& b = *job.program(1)->blocks[0];
    Op extra = makeOp(job, "c_allreduce_sum");
    extra.attrs.setInt(job.arena, "ring_id", 0);
    addInput(extra, job, "X", {"z"});
    addOutput(extra, job, "Out", {"z"});
    b.insertOp(b.ops.end(), std::move(extra));
    return true;
  }
};

PassRegistry registry() {
  PassRegistry r;
  r.add({"log-a", "", {}, [](const OptionValues&) { return std::make_unique<LogPass>("a"); }});
  r.add({"log-b", "", {}, [](const OptionValues&) { return std::make_unique<LogPass>("b"); }});
  r.add({"break", "", {}, [](const OptionValues&) { return std::make_unique<BreakPass>(); }});
  return r;
}

}  // namespace

TEST_CASE("passes run in order and report statistics", "[passes][manager]") {
  auto reg = registry();
  auto job = loadJobFromText(kManagerJob, "job.json");
  std::vector<std::string> log;
  g_log = &log;
  std::vector<std::string> seen_after;
  PassManagerOptions opts;
  opts.collect_explain = true;
  opts.after_pass = [&](const std::string& name, const Job&) { seen_after.push_back(name); };
  auto res = runPipeline(parsePipeline("log-b,log-a,log-b", reg), *job, opts);
  g_log = nullptr;
  CHECK(res.ok);
  CHECK(log == std::vector<std::string>{"b", "a", "b"});
  CHECK(seen_after == std::vector<std::string>{"log-b", "log-a", "log-b"});
  REQUIRE(res.runs.size() == 3);
  CHECK(res.runs[1].name == "log-a");
  CHECK(res.runs[1].stats.candidates == 1);
  CHECK(res.runs[1].stats.refused.at("because") == 1);
  REQUIRE(res.runs[1].explain.size() == 1);
  CHECK(res.runs[1].explain[0].reason == "a reason");
  CHECK_FALSE(res.runs[1].changed);
}

TEST_CASE("explain records are kept only when asked for", "[passes][manager]") {
  auto reg = registry();
  auto job = loadJobFromText(kManagerJob, "job.json");
  auto res = runPipeline(parsePipeline("log-a", reg), *job);
  REQUIRE(res.runs.size() == 1);
  CHECK(res.runs[0].stats.refused.at("because") == 1);
  CHECK(res.runs[0].explain.empty());
}

TEST_CASE("a pass that breaks an invariant stops the pipeline and is named", "[passes][manager]") {
  auto reg = registry();
  auto job = loadJobFromText(kManagerJob, "job.json");
  std::vector<std::string> log;
  g_log = &log;
  auto res = runPipeline(parsePipeline("log-a,break,log-b", reg), *job);
  g_log = nullptr;
  CHECK_FALSE(res.ok);
  CHECK(res.failed_pass == "break");
  CHECK(log == std::vector<std::string>{"a"});  // log-b never ran
  REQUIRE(res.runs.size() == 2);
  CHECK(res.runs.back().name == "break");
  REQUIRE_FALSE(res.problems.empty());
  bool found_ring = false;
  for (const auto& d : res.problems) found_ring |= d.message.find("ring 0") != std::string::npos;
  CHECK(found_ring);
}

TEST_CASE("the fusion pass in the pipeline: rewritten jobs verify, the empty pipeline changes nothing",
          "[passes][manager]") {
  auto job = loadJobFromText(kManagerJob, "job.json");
  std::string before = jobToString(*job);
  auto none = runPipeline(parsePipeline("", PassRegistry::builtin()), *job);
  CHECK(none.ok);
  CHECK(none.runs.empty());
  CHECK(jobToString(*job) == before);
  auto res = runPipeline(parsePipeline("fuse-allreduce-split", PassRegistry::builtin()), *job);
  CHECK(res.ok);
  REQUIRE(res.runs.size() == 1);
  CHECK(res.runs[0].changed);
  CHECK(res.runs[0].stats.candidates == 2);
  CHECK(res.runs[0].stats.rewritten == 2);
  std::string after = jobToString(*job);
  CHECK(after.find("c_reducescatter") != std::string::npos);
  CHECK(after.find("\"y_sum\"") == std::string::npos);
  // Running it again finds nothing to do.
  auto again = runPipeline(parsePipeline("fuse-allreduce-split", PassRegistry::builtin()), *job);
  CHECK(again.runs[0].stats.candidates == 0);
  CHECK_FALSE(again.runs[0].changed);
  CHECK(jobToString(*job) == after);
}
