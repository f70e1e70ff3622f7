// The stream plan (which op waits for which on another stream) and the streamed executor.
#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

#include "io/loader.h"
#include "runtime/executor.h"
#include "runtime/local_backend.h"
#include "runtime/report.h"
#include "runtime/stream_plan.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

// One rank; `ops` in the JSON form of format.md; vars a..h [8] float32, p persistable.
std::string oneRank(const std::string& ops, const std::string& fetch = "h") {
  std::string vars = R"({"name":"p","shape":[8],"dtype":"float32","persistable":true})";
  for (char c = 'a'; c <= 'h'; ++c) vars += R"(,{"name":")" + std::string(1, c) + R"(","shape":[8],"dtype":"float32"})";
  return R"({"format":"sp-opt.program","version":1,"world_size":1,"process_groups":[],"programs":[{"rank":0,"fetch":[")" + fetch +
         R"("],"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" + vars + R"(],"ops":[)" + ops + "]}]}]}";
}

std::string scale(const std::string& in, const std::string& out, const std::string& stream = "", const std::string& extra = "") {
  std::string d = stream.empty() ? "" : R"(,"dist_attr":{"execution_stream":")" + stream + "\"" + extra + "}";
  return R"({"type":"scale","inputs":{"X":[")" + in + R"("]},"outputs":{"Out":[")" + out +
         R"("]},"attrs":{"scale":2.0,"bias":1.0,"bias_after_scale":true})" + d + "}";
}

std::string add(const std::string& x, const std::string& y, const std::string& out, const std::string& stream = "") {
  std::string d = stream.empty() ? "" : R"(,"dist_attr":{"execution_stream":")" + stream + "\"}";
  return R"({"type":"elementwise_add","inputs":{"X":[")" + x + R"("],"Y":[")" + y + R"("]},"outputs":{"Out":[")" + out +
         R"("]},"attrs":{"axis":-1})" + d + "}";
}

// The waits of op i as "stream:count@op" strings.
std::vector<std::string> waits(const StreamPlan& plan, size_t i) {
  std::vector<std::string> w;
  for (const auto& x : plan.waits[i]) w.push_back(plan.names[x.stream] + ":" + std::to_string(x.count) + "@" + std::to_string(x.op));
  return w;
}

RankRun runWithStreams(const Job& job, bool single_stream) {
  auto backend = makeLocalBackend({});
  RankRun out;
  backend->run({0}, [&](int64_t rank, CommFactory& comms) {
    auto comm = comms.make(job);
    ExecOptions o;
    o.trace = true;
    o.single_stream = single_stream;
    out = executeProgram(*job.program(rank), *comm, o);
    return std::string();
  });
  return out;
}

}  // namespace

TEST_CASE("a read waits for its producer on another stream, not for ops of its own stream", "[runtime][streams]") {
  // 0 a->b (default), 1 b->c (side), 2 c->d (default), 3 b->e (side)
  auto job = loadJobFromText(oneRank(scale("a", "b") + "," + scale("b", "c", "side") + "," + scale("c", "d") + "," +
                                     scale("b", "e", "side") + "," + add("d", "e", "h")),
                             "t.json");
  const Program& p = *job->programs[0];
  StreamPlan plan = planStreams(p, entryBlock(p), true, FusedViews(entryBlock(p)));
  REQUIRE(plan.names == std::vector<std::string>{"default", "side"});
  CHECK(waits(plan, 0).empty());
  CHECK(waits(plan, 1) == std::vector<std::string>{"default:1@0"});
  CHECK(waits(plan, 2) == std::vector<std::string>{"side:1@1"});
  CHECK(waits(plan, 3) == std::vector<std::string>{"default:1@0"});
  CHECK(waits(plan, 4) == std::vector<std::string>{"side:2@3"});
  StreamPlan single = planStreams(p, entryBlock(p), false, FusedViews(entryBlock(p)));
  CHECK(single.names.size() == 1);
  for (size_t i = 0; i < single.waits.size(); ++i) CHECK(single.waits[i].empty());
}

TEST_CASE("an in-place write waits for the readers of the old value on other streams", "[runtime][streams]") {
  // 0 a->b, 1 b->c (side reads b), 2 b->b (default overwrites b: anti dependency on op 1),
  // 3 b->d (side: reads the new b, waits for op 2), 4 c+d->h
  auto job = loadJobFromText(oneRank(scale("a", "b") + "," + scale("b", "c", "side") + "," + scale("b", "b") + "," +
                                     scale("b", "d", "side") + "," + add("c", "d", "h")),
                             "t.json");
  const Program& p = *job->programs[0];
  StreamPlan plan = planStreams(p, entryBlock(p), true, FusedViews(entryBlock(p)));
  CHECK(waits(plan, 2) == std::vector<std::string>{"side:1@1"});
  CHECK(waits(plan, 3) == std::vector<std::string>{"default:2@2"});  // op 2 is the 2nd op of default
  RankRun streamed = runWithStreams(*job, false), single = runWithStreams(*job, true);
  REQUIRE(streamed.kept.size() == single.kept.size());
  for (size_t i = 0; i < single.kept.size(); ++i) CHECK(tensorChecksum(streamed.kept[i].second) == tensorChecksum(single.kept[i].second));
}

TEST_CASE("an op reading a fused buffer waits for the writers of its members, and a member's reader for the buffer's writer", "[runtime][streams]") {
  // coalesce_tensor makes ga and gb slices of fused; two scales write the slices on the compute
  // stream; the all-reduce of fused runs on a comm stream (as overlap-collectives leaves it); the
  // last op reads gb. Replay copies each slice's write into the buffer and the all-reduced buffer
  // back out (fused_views.h), so the all-reduce must wait for the second scale, not only for
  // coalesce_tensor, and the reader of gb for the all-reduce even without the event.
  auto job = loadJobFromText(R"(sp-opt.program text 1
world_size 1
group ring_id=0 ranks=[0]

rank 0 fetch=[out] {
  block 0 parent=-1 {
    var a : float32[2] persistable
    var b : float32[3] persistable
    var x : float32[2]
    var y : float32[3]
    var ga : float32[2]
    var gb : float32[3]
    var fused : float32[5]
    var out : float32[3]
    {Output=[ga, gb], FusedOutput=[fused]} = coalesce_tensor(Input=[a, b]) {copy_data=false, set_constant=false, constant=0.0, dtype=5, op_role=1}
    {Out=[ga]} = scale(X=[x]) {scale=1.0, bias=1.0, bias_after_scale=true, op_role=1}
    {Out=[gb]} = scale(X=[y]) {scale=1.0, bias=1.0, bias_after_scale=true, op_role=1}
    {Out=[fused]} = c_allreduce_sum(X=[fused]) {ring_id=0, op_role=1} dist={execution_stream="comm_ring_0"}
    {Out=[out]} = scale(X=[gb]) {scale=1.0, bias=0.0, bias_after_scale=true, op_role=1}
  }
}
)",
                             "fused.sptxt");
  const Program& p = *job->programs[0];
  StreamPlan plan = planStreams(p, entryBlock(p), true, FusedViews(entryBlock(p)));
  REQUIRE(plan.names == std::vector<std::string>{"default", "comm_ring_0"});
  CHECK(waits(plan, 3) == std::vector<std::string>{"default:3@2"});  // gb's scale, the 3rd op of default
  CHECK(waits(plan, 4) == std::vector<std::string>{"comm_ring_0:1@3"});
}

TEST_CASE("events_to_wait orders an op after the last earlier op recording the event", "[runtime][streams]") {
  // 0 a->b (side, records e1), 1 c->d (default, waits e1: no data flows between them),
  // 2 b->e (default, waits e2: never recorded earlier, so no wait), 3 ... records e2 too late
  auto job = loadJobFromText(oneRank(scale("a", "b", "side", R"(,"event_to_record":"e1")") + "," +
                                     R"({"type":"scale","inputs":{"X":["c"]},"outputs":{"Out":["d"]},"attrs":{"scale":1.0},)"
                                     R"("dist_attr":{"events_to_wait":["e1"]}},)" +
                                     R"({"type":"scale","inputs":{"X":["d"]},"outputs":{"Out":["e"]},"attrs":{"scale":1.0},)"
                                     R"("dist_attr":{"events_to_wait":["e2",""]}},)" +
                                     scale("e", "f", "side", R"(,"event_to_record":"e2")") + "," + add("b", "f", "h")),
                             "t.json");
  const Program& p = *job->programs[0];
  StreamPlan plan = planStreams(p, entryBlock(p), true, FusedViews(entryBlock(p)));
  CHECK(waits(plan, 1) == std::vector<std::string>{"side:1@0"});
  CHECK(waits(plan, 2).empty());
  CHECK(waits(plan, 3) == std::vector<std::string>{"default:2@2"});  // its input e (2nd op of default)
}

TEST_CASE("a buffer read on two streams is released after both readers, and the trace has a track per stream", "[runtime][streams]") {
  // b is read by op 1 (side) and op 2 (default) and then never again: whichever finishes last frees it.
  auto job = loadJobFromText(oneRank(scale("a", "b") + "," + scale("b", "c", "side") + "," + scale("b", "d") + "," +
                                     add("c", "d", "h")),
                             "t.json");
  for (int rep = 0; rep < 20; ++rep) {
    RankRun streamed = runWithStreams(*job, false), single = runWithStreams(*job, true);
    REQUIRE(streamed.kept.size() == 2);  // h, p
    CHECK(tensorChecksum(streamed.kept[0].second) == tensorChecksum(single.kept[0].second));
    CHECK(streamed.peak_bytes <= 5 * 8 * sizeof(float));  // never all 8 vars at once
    REQUIRE(streamed.events.size() == 4);
    CHECK(streamed.events[1].stream == "side");
    CHECK(streamed.events[2].stream == "default");
  }
  std::map<int64_t, nlohmann::ordered_json> by_rank{{0, eventsToJson(runWithStreams(*job, false).events)}};
  auto trace = nlohmann::json::parse(chromeTrace(by_rank));
  std::set<int64_t> tids;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X") tids.insert(e["tid"].get<int64_t>());
  CHECK(tids == std::set<int64_t>{0, 1000});
}

TEST_CASE("a stream of collectives only gets a favoured thread, a stream with kernels does not", "[runtime][streams]") {
  // 0 a->b (default), 1 all-reduce b->c (comm), 2 b->d (side: a kernel), 3 c+d->h (default)
  std::string ops = scale("a", "b") + R"(,{"type":"c_allreduce_sum","inputs":{"X":["b"]},"outputs":{"Out":["c"]},)" +
                    R"("attrs":{"ring_id":0,"use_calc_stream":true},"dist_attr":{"execution_stream":"comm"}},)" +
                    scale("b", "d", "side") + "," + add("c", "d", "h");
  std::string text = oneRank(ops);
  const std::string no_groups = R"("process_groups":[])";
  text.replace(text.find(no_groups), no_groups.size(), R"("process_groups":[{"ring_id":0,"ranks":[0]}])");
  auto job = loadJobFromText(text, "t.json");
  RankRun streamed = runWithStreams(*job, false);
  REQUIRE(streamed.favoured.size() == 1);
  CHECK(streamed.favoured[0].first == "comm");
  CHECK(runWithStreams(*job, true).favoured.empty());
}

TEST_CASE("favourCommunicationThread reports only what the scheduler granted", "[runtime][streams]") {
  CommThreadFavour got;
  int nice_before = 0, nice_after = 0;
  std::thread([&] {
    nice_before = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
    got = favourCommunicationThread();
    nice_after = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
  }).join();
  CHECK(nice_after == (got.higher_priority ? nice_before - kCommNiceBoost : nice_before));
  if (!got.higher_priority) WARN("no privilege to raise a thread's priority here: the communication threads keep theirs");
  if (!got.short_slice) WARN("this kernel keeps no per-thread time slice (Linux 6.12+)");
}

namespace {
std::vector<int> threadCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}
}  // namespace

TEST_CASE("rank threads of one process are pinned to cores of their own, other threads unpinned", "[runtime][streams]") {
  const std::vector<int> all = threadCpus();
  configureCpuBudget(2, 2);
  const int cores = std::min(cpuBudget().cores, int(all.size()));
  if (2 * cpuBudget().blas_threads > cores) {  // SPOPT_CORES beyond the mask, or one core
    CHECK_FALSE(pinRankThread(0));
    WARN("the ranks' threads need more cores than the process's mask has: nothing to pin");
    configureCpuBudget(1, 1);
    return;
  }
  std::vector<int> rank0, rank1, unpinned;
  bool pinned0 = false, pinned1 = false;
  std::thread([&] {
    pinned0 = pinRankThread(0);
    rank0 = threadCpus();
    unpinThread();
    unpinned = threadCpus();
  }).join();
  std::thread([&] {
    pinned1 = pinRankThread(1);
    rank1 = threadCpus();
  }).join();
  CHECK(pinned0);
  CHECK(pinned1);
  CHECK(rank0.size() == size_t(cpuBudget().blas_threads));
  CHECK(rank1.size() == size_t(cpuBudget().blas_threads));
  CHECK(rank0 != rank1);
  CHECK(unpinned == all);
  CHECK_FALSE(pinRankThread(2));  // no such rank position
  configureCpuBudget(1, 1);
  CHECK_FALSE(pinRankThread(0));  // one rank: the process's cores are its own
  CHECK(threadCpus() == all);
}
