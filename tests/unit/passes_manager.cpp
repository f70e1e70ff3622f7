// The pass manager: order, statistics, verification after each pass, and stopping at the first
// pass that breaks an invariant.
#include <catch2/catch.hpp>

#include <optional>
#include <thread>

#include "io/loader.h"
#include "io/writer.h"
#include "ir/op_role.h"
#include "ops/op_builder.h"
#include "passes/pass_manager.h"
#include "verify/verifier.h"

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

// Gives rank 0's relu an input of another shape than its output: the op's own shape rule fails.
class BreakShapePass : public Pass {
 public:
  bool run(Job& job, PassContext&) override {
    Block& b = *job.program(0)->blocks[0];
    Op& relu = b.ops.back();
    setInputArg(relu, "X", 0, b.lookup("y"));  // [4,2] into a [2,2] output
    return true;
  }
};

std::vector<std::optional<int64_t>>* g_received_peaks = nullptr;

// A pass of the chain as the analyses it hands on see it: `leave` measures every program's peak
// after its edit and records it; `touch` edits without measuring; `keep` changes nothing;
// `read` logs the peaks it received.
class PeakPass : public Pass {
 public:
  enum Mode { Leave, Touch, Keep, Read };
  explicit PeakPass(Mode m) : mode_(m) {}
  bool run(Job& job, PassContext& ctx) override {
    for (auto& p : job.programs) {
      if (mode_ == Read && g_received_peaks) g_received_peaks->push_back(ctx.receivedPeakBytes(*p));
      if (mode_ == Leave) ctx.leavePeakBytes(*p, 100 + int64_t(p->position));
    }
    return mode_ == Leave || mode_ == Touch;
  }

 private:
  Mode mode_;
};

PassRegistry registry() {
  PassRegistry r;
  for (auto [name, mode] : {std::pair{"peak-leave", PeakPass::Leave}, std::pair{"peak-touch", PeakPass::Touch},
                            std::pair{"peak-keep", PeakPass::Keep}, std::pair{"peak-read", PeakPass::Read}})
    r.add({name, "", {}, [mode = mode](const OptionValues&) { return std::make_unique<PeakPass>(mode); }});
  // The same breakages from passes that declare their edits journaled: the verifier after them
  // checks only what they touched, and must still catch and name them.
  PassInfo ring{"break-journaled", "", {}, [](const OptionValues&) { return std::make_unique<BreakPass>(); }};
  ring.journaled = true;
  r.add(ring);
  PassInfo shape{"break-shape-journaled", "", {}, [](const OptionValues&) { return std::make_unique<BreakShapePass>(); }};
  shape.journaled = true;
  r.add(shape);
  r.add({"break-shape", "", {}, [](const OptionValues&) { return std::make_unique<BreakShapePass>(); }});
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

TEST_CASE("a pass gets the peaks the previous pass measured, while no pass changed the job since", "[passes][manager]") {
  auto reg = registry();
  auto job = loadJobFromText(kManagerJob, "job.json");
  std::vector<std::optional<int64_t>> received;
  g_received_peaks = &received;
  auto res = runPipeline(parsePipeline("peak-read,peak-leave,peak-read,peak-keep,peak-read,peak-touch,peak-read", reg), *job);
  g_received_peaks = nullptr;
  REQUIRE(res.ok);
  using P = std::optional<int64_t>;
  CHECK(received == std::vector<P>{std::nullopt, std::nullopt,  // nothing measured yet
                                   100, 101,                    // as peak-leave left the job
                                   100, 101,                    // peak-keep changed nothing
                                   std::nullopt, std::nullopt});  // peak-touch edited without measuring
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

TEST_CASE("the verifier after a journaled pass checks what it touched and names a pass that breaks an invariant",
          "[passes][manager][verify]") {
  auto reg = registry();
  for (const char* name : {"break-journaled", "break"}) {  // a ring's issue order, touched-only and full
    auto job = loadJobFromText(kManagerJob, "job.json");
    auto res = runPipeline(parsePipeline(std::string("log-a,") + name + ",log-b", reg), *job);
    CHECK_FALSE(res.ok);
    CHECK(res.failed_pass == name);
    bool found_ring = false;
    for (const auto& d : res.problems) found_ring |= d.message.find("ring 0") != std::string::npos;
    CHECK(found_ring);
  }
  // An op's own rule, broken by rewiring one of its inputs: the same problem either way.
  std::vector<std::string> messages;
  for (const char* name : {"break-shape-journaled", "break-shape"}) {
    auto job = loadJobFromText(kManagerJob, "job.json");
    auto res = runPipeline(parsePipeline(name, reg), *job);
    CHECK_FALSE(res.ok);
    CHECK(res.failed_pass == name);
    REQUIRE(res.problems.size() == 1);
    CHECK(res.problems[0].pointer == "/programs/0/blocks/0/ops/2/outputs/Out/0");
    messages.push_back(res.problems[0].message);
  }
  CHECK(messages[0] == messages[1]);
}

TEST_CASE("the edit journal records what the IR's edit functions change, and scopes the verifier", "[passes][verify]") {
  auto job = loadJobFromText(kManagerJob, "job.json");
  Block& b = *job->program(0)->blocks[0];
  Op& relu = b.ops.back();
  Op& split = *std::next(b.ops.begin());
  EditJournal j;
  job->journal = &j;
  setInputArg(relu, "X", 0, b.lookup("y"));  // breaks relu's shape rule
  b.moveOp(&split, b.ops.end());
  job->journal = nullptr;
  CHECK(j.ops == std::vector<Op*>{&relu});
  CHECK(j.moved == std::vector<Op*>{&split});
  VerifyOptions scoped;
  scoped.touched = &j;
  auto found = verifyJob(*job, scoped);
  auto full = verifyJob(*job);
  REQUIRE(found.size() == 1);
  REQUIRE(full.size() == 1);
  CHECK(found[0].pointer == full[0].pointer);
  CHECK(found[0].message == full[0].message);
  // Nothing recorded: nothing of the job's ops is looked at.
  EditJournal none;
  scoped.touched = &none;
  CHECK(verifyJob(*job, scoped).empty());
  // A setter restating what the op holds is no edit, and records nothing.
  EditJournal restated;
  job->journal = &restated;
  setExecutionStream(split, *job, "comm_0");
  setExecutionStream(split, *job, "comm_0");
  setPhase(split, *job, Phase::Forward);
  setPhase(split, *job, Phase::Forward);
  job->journal = nullptr;
  CHECK(restated.ops == std::vector<Op*>{&split});        // the phase: an attribute of its own
  CHECK(restated.execution == std::vector<Op*>{&split});  // the stream: an execution attribute only
  CHECK(split.executionStream() == "comm_0");
  scoped.touched = &restated;
  CHECK(verifyJob(*job, scoped).empty());
}

TEST_CASE("edits made on threads of their own journal as a serial run of the same edits would", "[passes][verify]") {
  // Each rank: a relu appended, the split erased, a var added; rank 0 then rank 1.
  auto edit = [](Job& job, int64_t rank) {
    Block& b = *job.program(rank)->blocks[0];
    Op relu = makeOp(job, "relu");
    addInput(relu, job, "X", {"z"});
    addOutput(relu, job, "Out", {"z"});
    b.insertOp(b.ops.end(), std::move(relu));
    b.eraseOp(&*std::next(b.ops.begin()));
    OpBuilder(b).freshVar("extra_" + std::to_string(rank), {2}, DType::Float32);
  };
  auto names = [](const EditJournal& j) {
    std::vector<std::string> out;
    for (const Op* op : j.ops) out.push_back(std::to_string(op->block->program->rank) + ":" + std::string(op->type));
    for (const Var* v : j.vars) out.push_back(std::string(v->name));
    return out;  // (not the erased: which addresses a later insert reuses is the allocator's)
  };
  auto serial_job = loadJobFromText(kManagerJob, "job.json");
  EditJournal serial;
  serial_job->journal = &serial;
  edit(*serial_job, 0);
  edit(*serial_job, 1);
  serial_job->journal = nullptr;

  auto job = loadJobFromText(kManagerJob, "job.json");
  EditJournal merged;
  job->journal = &merged;
  std::vector<EditJournal> own(2);
  std::vector<Arena*> arenas{&job->edit_arenas.emplace_back(), &job->edit_arenas.emplace_back()};
  std::thread t1([&] {
    ThreadEdits e(*job, *arenas[1], &own[1]);
    edit(*job, 1);
  });
  std::thread t0([&] {
    ThreadEdits e(*job, *arenas[0], &own[0]);
    edit(*job, 0);
  });
  t0.join();
  t1.join();
  CHECK(merged.ops.empty());  // nothing reached the job's journal from the threads
  merged.append(std::move(own[0]));
  merged.append(std::move(own[1]));
  job->journal = nullptr;
  CHECK(names(merged) == names(serial));
  CHECK(names(merged) == std::vector<std::string>{"0:relu", "1:relu", "extra_0", "extra_1"});
  VerifyOptions scoped;
  scoped.touched = &merged;
  CHECK(verifyJob(*job, scoped).empty());
  CHECK(job->program(1)->blocks[0]->findLocal("extra_1")->name == "extra_1");  // its text in the thread's arena
}

TEST_CASE("a journal appended after another: an address it inserts at is no longer erased", "[passes][verify]") {
  auto job = loadJobFromText(kManagerJob, "job.json");
  Op* a = &job->program(0)->blocks[0]->ops.front();
  Op* b = &job->program(1)->blocks[0]->ops.front();
  EditJournal first, later;
  first.erased = {a, b};
  later.ops = {a};  // a new op at a's address
  later.erased = {};
  first.append(std::move(later));
  CHECK(first.erased.count(a) == 0);
  CHECK(first.erased.count(b) == 1);
  CHECK(first.ops == std::vector<Op*>{a});
}

TEST_CASE("an erased collective puts its ring's issue order under the touched-only check", "[passes][verify]") {
  auto job = loadJobFromText(kManagerJob, "job.json");
  Block& b = *job->program(0)->blocks[0];
  Op& ar = b.ops.front();
  Op& split = *std::next(b.ops.begin());
  EditJournal j;
  job->journal = &j;
  setInputArg(split, "X", 0, b.lookup("y"));  // the split reads the all-reduce's input instead
  b.eraseOp(&ar);
  job->journal = nullptr;
  CHECK(j.erased.contains(&ar));
  CHECK(j.erased_rings == std::vector<int64_t>{0});
  VerifyOptions scoped;
  scoped.touched = &j;
  auto found = verifyJob(*job, scoped);
  auto full = verifyJob(*job);
  REQUIRE_FALSE(full.empty());
  REQUIRE(found.size() == full.size());
  for (size_t i = 0; i < found.size(); ++i) CHECK(found[i].message == full[i].message);
  CHECK(found[0].message.find("ring 0") != std::string::npos);
}
