// The shared driver of the passes that change collectives (passes/collective_rewrite_driver.h) on
// small jobs in the text form: the every-member-or-none decision at an aligned ring position, its
// codes and wordings, the pass's own position check, the insertion slot check and the counts; and
// declared statistics (passes/statistic.h).
#include <catch2/catch.hpp>

#include <set>

#include "io/text_reader.h"
#include "passes/collective_rewrite_driver.h"

using namespace spopt;

namespace {

// A job of `world` ranks with one group, ring 0 of `group_ranks`; each of `present` ranks issues
// `collectives` all-reduces on ring 0, one after another.
std::unique_ptr<Job> ringJob(int world, const std::string& group_ranks, const std::vector<int>& present, int collectives = 1) {
  std::string text = "sp-opt.program text 1\nworld_size " + std::to_string(world) + "\ngroup ring_id=0 ranks=[" + group_ranks + "]\n";
  for (int r : present) {
    text += "rank " + std::to_string(r) + " {\n  block 0 parent=-1 {\n    var x0 : float32[4]\n";
    for (int i = 1; i <= collectives; ++i) text += "    var x" + std::to_string(i) + " : float32[4]\n";
    for (int i = 1; i <= collectives; ++i)
      text += "    {Out=[x" + std::to_string(i) + "]} = c_allreduce_sum(X=[x" + std::to_string(i - 1) + "]) {ring_id=0, op_role=0}\n";
    text += "  }\n}\n";
  }
  return readTextJob(text, "test.sptxt");
}

struct TestMatch {
  int rank = 0;
};

// Enters every all-reduce of the job: the ones of `refusing` (rank, collective #) are refused by
// their rank's own checks ("own-check"), the rest matched; the ones of `skipped` are not entered.
using Table = CollectiveRewriteDriver<TestMatch>;
Table tableOf(Job& job, const std::set<std::pair<int64_t, size_t>>& refusing, const std::set<std::pair<int64_t, size_t>>& skipped = {}) {
  Table t(job, {"fuse", "fused", "fusion", "an all-reduce"});
  for (auto& p : job.programs) {
    size_t k = 0;
    for (Op& op : p->blocks.front()->ops) {
      auto coll = asCollective(op);
      REQUIRE(coll);
      std::pair<int64_t, size_t> at{p->rank, k++};
      if (skipped.count(at)) continue;
      if (refusing.count(at))
        t.add(op, *coll, true, std::nullopt, {"own-check", "rank " + std::to_string(p->rank) + "'s own reason"});
      else
        t.add(op, *coll, true, TestMatch{int(p->rank)}, {});
    }
  }
  return t;
}

// The candidate of rank `rank`'s collective #k.
const CandidateState& at(const Table& t, const Job& job, int64_t rank, size_t k) {
  const Op& op = *std::next(job.program(rank)->blocks.front()->ops.begin(), long(k));
  return t.state(*t.indexOf(op));
}

}  // namespace

TEST_CASE("driver: every member matched, every member changes", "[passes][driver]") {
  auto job = ringJob(3, "0,1,2", {0, 1, 2});
  Table t = tableOf(*job, {});
  auto agreed = t.decide(RingOrder(*job));
  REQUIRE(agreed.size() == 1);
  CHECK(agreed[0].k == 0);
  CHECK(agreed[0].members.size() == 3);
  for (int64_t r : {0, 1, 2}) {
    CHECK(at(t, *job, r, 0).change);
    CHECK(at(t, *job, r, 0).note.empty());
  }
  PassContext ctx(true);
  t.report(ctx);
  CHECK(ctx.stats.candidates == 3);
  CHECK(ctx.stats.rewritten == 3);
  CHECK(ctx.stats.refusedTotal() == 0);
}

TEST_CASE("driver: one member refuses, so every member refuses with peer-refused", "[passes][driver]") {
  auto job = ringJob(3, "0,1,2", {0, 1, 2});
  Table t = tableOf(*job, {{1, 0}});
  CHECK(t.decide(RingOrder(*job)).empty());
  for (int64_t r : {0, 2}) {
    const CandidateState& c = at(t, *job, r, 0);
    CHECK_FALSE(c.change);
    CHECK(c.refusal.code == "peer-refused");
    CHECK(c.refusal.reason == "rank 1 cannot fuse collective #0 of ring 0 [0,1,2] (rank 1's own reason), so no rank of ring 0 does");
  }
  CHECK(at(t, *job, 1, 0).refusal.code == "own-check");  // the refusing rank keeps its own reason
  PassContext ctx(true);
  t.report(ctx);
  CHECK(ctx.stats.candidates == 3);
  CHECK(ctx.stats.rewritten == 0);
  CHECK(ctx.stats.refused.at("peer-refused") == 2);
  CHECK(ctx.stats.refused.at("own-check") == 1);
  REQUIRE(ctx.explain.size() == 3);
  CHECK(ctx.explain[0].rank == 0);
  CHECK(ctx.explain[0].op_type == "c_allreduce_sum");
  CHECK(ctx.explain[0].code == "peer-refused");
}

TEST_CASE("driver: a member whose collective is no candidate refuses for all", "[passes][driver]") {
  auto job = ringJob(2, "0,1", {0, 1});
  Table t = tableOf(*job, {}, {{1, 0}});
  CHECK(t.decide(RingOrder(*job)).empty());
  const CandidateState& c = at(t, *job, 0, 0);
  CHECK(c.refusal.code == "peer-refused");
  CHECK(c.refusal.reason ==
        "rank 1 cannot fuse collective #0 of ring 0 [0,1] (its collective #0 is c_allreduce_sum, not an all-reduce), so no rank of ring 0 does");
}

TEST_CASE("driver: ring members without a program change with the note peers-absent", "[passes][driver]") {
  auto job = ringJob(4, "0,1,2,3", {0, 2});
  Table t = tableOf(*job, {});
  auto agreed = t.decide(RingOrder(*job));
  REQUIRE(agreed.size() == 1);
  for (int64_t r : {0, 2}) {
    const CandidateState& c = at(t, *job, r, 0);
    CHECK(c.change);
    CHECK(c.note.code == "peers-absent");
    CHECK(c.note.reason == "cross-rank agreement could not be checked: ranks 1, 3 of ring 0 [0,1,2,3] are not in this file");
  }
  PassContext ctx(true);
  t.report(ctx);
  CHECK(ctx.stats.rewritten == 2);
  CHECK(ctx.stats.notes.at("peers-absent") == 2);
  REQUIRE(ctx.explain.size() == 2);
  CHECK(ctx.explain[0].rewritten);
}

TEST_CASE("driver: a present member refusing still blocks the others when peers are absent", "[passes][driver]") {
  auto job = ringJob(3, "0,1,2", {0, 1});
  Table t = tableOf(*job, {{0, 0}});
  CHECK(t.decide(RingOrder(*job)).empty());
  CHECK(at(t, *job, 1, 0).refusal.code == "peer-refused");
  CHECK_FALSE(at(t, *job, 1, 0).change);
}

TEST_CASE("driver: each aligned position is decided on its own", "[passes][driver]") {
  auto job = ringJob(2, "0,1", {0, 1}, 2);
  Table t = tableOf(*job, {{1, 1}});
  auto agreed = t.decide(RingOrder(*job));
  REQUIRE(agreed.size() == 1);
  CHECK(agreed[0].k == 0);
  CHECK(at(t, *job, 0, 0).change);
  CHECK(at(t, *job, 1, 0).change);
  CHECK(at(t, *job, 0, 1).refusal.code == "peer-refused");
  CHECK(at(t, *job, 0, 1).refusal.reason.find("collective #1 of ring 0 [0,1]") != std::string::npos);
}

TEST_CASE("driver: the pass's own position check refuses every member", "[passes][driver]") {
  auto job = ringJob(2, "0,1", {0, 1}, 2);
  Table t = tableOf(*job, {});
  DecideOptions opts;
  int checked = 0;
  opts.check = [&](const AgreedPosition& pos) -> Refusal {
    ++checked;
    CHECK(pos.members.size() == 2);
    if (pos.k == 1) return {"too-small", "under the limit"};
    return {};
  };
  auto agreed = t.decide(RingOrder(*job), opts);
  CHECK(checked == 2);
  REQUIRE(agreed.size() == 1);
  for (int64_t r : {0, 1}) {
    CHECK(at(t, *job, r, 0).change);
    CHECK(at(t, *job, r, 1).refusal.code == "too-small");
  }
  // refuseAll (what a later policy uses) refuses a whole agreed position.
  t.refuseAll(agreed[0], {"budget-met", "within budget"});
  CHECK_FALSE(at(t, *job, 1, 0).change);
  CHECK(at(t, *job, 1, 0).refusal.code == "budget-met");
}

TEST_CASE("driver: skipping agreement changes by each rank's own checks, with a note", "[passes][driver]") {
  auto job = ringJob(2, "0,1", {0, 1});
  Table t = tableOf(*job, {{1, 0}});
  DecideOptions opts;
  opts.skip_agreement = true;
  opts.skip_agreement_option = "unsafe-skip-agreement=true";
  t.decide(RingOrder(*job), opts);
  CHECK(at(t, *job, 0, 0).change);
  CHECK(at(t, *job, 0, 0).note.code == "agreement-skipped");
  CHECK(at(t, *job, 0, 0).note.reason ==
        "fused although rank 1 cannot fuse collective #0 of ring 0 [0,1] (rank 1's own reason) (unsafe-skip-agreement=true)");
  CHECK_FALSE(at(t, *job, 1, 0).change);
}

TEST_CASE("driver: a rank outside the ring's group is refused not-member", "[passes][driver]") {
  auto job = ringJob(3, "0,1", {0, 1, 2});
  Table t = tableOf(*job, {});
  t.decide(RingOrder(*job));
  CHECK(at(t, *job, 0, 0).change);
  PassContext ctx(true);
  t.report(ctx);
  CHECK(ctx.stats.refused.at("not-member") == 1);
  REQUIRE(ctx.explain.size() == 1);
  CHECK(ctx.explain[0].rank == 2);
  CHECK(ctx.explain[0].reason == "rank 2 is not a member of ring 0 [0,1]");
}

TEST_CASE("driver: insertions must land after the same number of ring collectives", "[passes][driver]") {
  auto job = ringJob(2, "0,1", {0, 1}, 2);
  Table t = tableOf(*job, {});
  RingOrder rings(*job);
  // Rank 0 inserts before its collective #1, rank 1 before its #0: slots 1 and 0.
  auto planned = [&](size_t i) {
    const CandidateState& c = t.state(i);
    const auto& ops = c.op->block->ops;
    const Op* before = c.op->block->program->rank == 0 ? &*std::next(ops.begin()) : &*ops.begin();
    return PlannedCollective{before, signatureOf(*c.op)};
  };
  DecideOptions opts;
  opts.check = [&](const AgreedPosition& pos) { return t.sameInsertionSlot(pos, [&](size_t i) { return planned(i).before; }); };
  CHECK(t.decide(rings, opts).empty());
  const CandidateState& c = at(t, *job, 0, 0);
  CHECK(c.refusal.code == "ring-order");
  CHECK(c.refusal.reason == "ring order would differ on rank 1: its fusion of collective #0 of ring 0 would follow 0 ring collectives, rank 0's 1");
  // The same plan on both ranks agrees, and the whole insertion set then checks out.
  Table same = tableOf(*job, {});
  auto first = [&](size_t i) { return PlannedCollective{&*same.state(i).op->block->ops.begin(), signatureOf(*same.state(i).op)}; };
  opts.check = [&](const AgreedPosition& pos) { return same.sameInsertionSlot(pos, [&](size_t i) { return first(i).before; }); };
  auto agreed = same.decide(rings, opts);
  CHECK(agreed.size() == 2);
  same.checkInsertions(rings, agreed, first);
  CHECK(at(same, *job, 1, 1).change);
}

TEST_CASE("declared statistics: published under their one name, only when measured", "[passes][statistics]") {
  struct Stats {
    Statistic bytes, count;
  };
  std::vector<StatisticSpec> specs = {bindStatistic(&Stats::bytes, "some-bytes", StatUnit::Bytes, "b"),
                                      bindStatistic(&Stats::count, "things", StatUnit::Count, "c")};
  CHECK(std::string(statUnitName(specs[0].unit)) == "bytes");
  PassContext ctx(false, &specs);
  Stats s;
  s.bytes += 5;
  s.bytes += 7;
  ctx.publish(s);
  CHECK(ctx.stats.figures.at("some-bytes") == 12);
  CHECK(ctx.stats.figures.count("things") == 0);  // never measured: not reported
  Statistic peak;
  peak.raiseTo(3);
  peak.raiseTo(9);
  peak.raiseTo(4);
  CHECK(*peak.value() == 9);
  struct Other {
    Statistic x;
  };
  CHECK_THROWS_AS(ctx.publish(Other{}), std::logic_error);
}

TEST_CASE("driver: the order check finds a ring reordered on one member", "[passes][driver]") {
  auto job = readTextJob(
      "sp-opt.program text 1\nworld_size 2\ngroup ring_id=0 ranks=[0,1]\n"
      "rank 0 {\n  block 0 parent=-1 {\n    var a : float32[4]\n    var b : float32[8]\n    var c : float32[4]\n    var d : float32[8]\n"
      "    {Out=[c]} = c_allreduce_sum(X=[a]) {ring_id=0}\n    {Out=[d]} = c_allreduce_sum(X=[b]) {ring_id=0}\n  }\n}\n"
      "rank 1 {\n  block 0 parent=-1 {\n    var a : float32[4]\n    var b : float32[8]\n    var c : float32[4]\n    var d : float32[8]\n"
      "    {Out=[c]} = c_allreduce_sum(X=[a]) {ring_id=0}\n    {Out=[d]} = c_allreduce_sum(X=[b]) {ring_id=0}\n  }\n}\n",
      "test.sptxt");
  RingOrder before(*job);
  CHECK(checkRingOrders(*job, before).empty());
  Block& b1 = *job->program(1)->blocks.front();
  b1.moveOp(&*std::next(b1.ops.begin()), b1.ops.begin());  // rank 1 now issues the float32[8] first
  Refusal r = checkRingOrders(*job, before);
  CHECK(r.code == "ring-order");
  CHECK(r.reason.find("ring 0: ") == 0);
  CHECK(r.reason.find("collective #0") != std::string::npos);
}

TEST_CASE("checkRingOrders refuses a reorder that keeps the signatures but pairs other collectives", "[passes][driver]") {
  // Two all-reduces of equal signature (float32[4]) on ring 0, independent of each other.
  std::string text = "sp-opt.program text 1\nworld_size 2\ngroup ring_id=0 ranks=[0,1]\n";
  for (int r : {0, 1})
    text += "rank " + std::to_string(r) +
            " {\n  block 0 parent=-1 {\n    var a : float32[4]\n    var b : float32[4]\n    var a2 : float32[4]\n    var b2 : float32[4]\n"
            "    {Out=[a2]} = c_allreduce_sum(X=[a]) {ring_id=0, op_role=1}\n"
            "    {Out=[b2]} = c_allreduce_sum(X=[b]) {ring_id=0, op_role=1}\n  }\n}\n";
  auto job = readTextJob(text, "test.sptxt");
  RingOrder before(*job);
  auto swap = [&](int64_t rank) {  // moves the rank's second all-reduce before its first
    Block& b = *job->program(rank)->blocks.front();
    b.moveOp(&*std::next(b.ops.begin()), b.ops.begin());
  };
  CHECK(checkRingOrders(*job, before).empty());
  swap(1);
  Refusal r = checkRingOrders(*job, before);
  CHECK(r.code == "ring-order");
  CHECK(r.reason == "ring 0 collective #0: rank 0 issues its former #0, rank 1 its former #1");
  swap(0);  // the same permutation on both ranks
  CHECK(checkRingOrders(*job, before).empty());
}
