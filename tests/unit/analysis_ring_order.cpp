// Ring alignment (analysis/ring_order.h) on a generated tp2 x dp2 job: aligned positions, the
// agreement rule, and the insertion and reorder questions.
#include <catch2/catch.hpp>

#include "analysis/ring_order.h"
#include "gen/generate.h"
#include "io/loader.h"

using namespace spopt;

namespace {
std::unique_ptr<Job> tp2dp2() {
  gen::GenOptions o;
  o.model = gen::Model::Gpt;
  o.tp = 2;
  o.dp = 2;
  o.sequence_parallel = true;
  return loadJobFromText(gen::generateJobText(o), "gen.json");
}
}  // namespace

TEST_CASE("ring order aligns each ring's collectives across its members", "[analysis][ring]") {
  auto job = tp2dp2();
  RingOrder order(*job);
  REQUIRE(order.rings().size() == job->groups.size());
  size_t checked = 0;
  for (const Ring& r : order.rings()) {
    REQUIRE(r.group);
    CHECK(r.absent.empty());
    REQUIRE(r.members.size() == 2);
    REQUIRE(r.length() > 0);
    CHECK(r.members[0].ops.size() == r.members[1].ops.size());
    for (size_t k = 0; k < r.length(); ++k) {
      const Op* a = r.members[0].ops[k];
      const Op* b = r.members[1].ops[k];
      CHECK(signatureOf(*a) == signatureOf(*b));
      auto pa = order.placeOf(*a);
      REQUIRE(pa);
      CHECK(pa->ring_id == r.ring_id);
      CHECK(pa->k == k);
      CHECK(order.placeOf(*b)->k == k);
      ++checked;
    }
    CHECK(order.byRing(*r.members[0].program).at(r.ring_id) == r.members[0].ops);
    CHECK(order.checkInsertions(r.ring_id, {}).ok);
    CHECK(order.checkOrder(r.ring_id, {}).ok);
  }
  CHECK(checked > 4);
  // Non-collectives have no place.
  CHECK_FALSE(order.placeOf(job->programs[0]->blocks[0]->ops.front()));
}

TEST_CASE("agreement: every member or none, the first refusing rank named", "[analysis][ring]") {
  auto job = tp2dp2();
  RingOrder order(*job);
  const Ring& r = order.rings().front();
  int64_t second = r.members[1].program->rank;
  auto all_ok = agreeAt(r, 0, [](const RingIssuer&, const Op&) { return std::optional<std::string>(); });
  CHECK(all_ok.agree);
  auto one_refuses = agreeAt(r, 0, [&](const RingIssuer& m, const Op& op) {
    return m.program->rank == second ? std::optional<std::string>("its collective is " + std::string(op.type)) : std::nullopt;
  });
  CHECK_FALSE(one_refuses.agree);
  CHECK(one_refuses.blocker_rank == second);
  CHECK(one_refuses.why.rfind("its collective is ", 0) == 0);
  auto past_end = agreeAt(r, r.length(), [](const RingIssuer&, const Op&) { return std::optional<std::string>(); });
  CHECK_FALSE(past_end.agree);
  CHECK(past_end.blocker_rank == r.members[0].program->rank);
  CHECK(past_end.why == "it issues no collective #" + std::to_string(r.length()));
}

TEST_CASE("insertions at matching places agree, at mismatching places the rank is named", "[analysis][ring]") {
  auto job = tp2dp2();
  RingOrder order(*job);
  const Ring* r = nullptr;
  for (const Ring& x : order.rings())
    if (x.length() >= 3) r = &x;
  REQUIRE(r);
  CollectiveSig gather{CollectiveKind::AllGather, ReduceOp::Sum, DType::Float32, 256};
  int64_t r0 = r->members[0].program->rank, r1 = r->members[1].program->rank;
  std::map<int64_t, std::vector<PlannedCollective>> same{{r0, {{r->members[0].ops[1], gather}}},
                                                         {r1, {{r->members[1].ops[1], gather}}}};
  CHECK(order.checkInsertions(r->ring_id, same).ok);
  // Before a non-collective op between #0 and #1: still slot 1 on that rank.
  const Op* between = &*std::prev(r->members[1].ops[1]->self);
  if (between != r->members[1].ops[0]) {
    same[r1] = {{between, gather}};
    CHECK(order.checkInsertions(r->ring_id, same).ok);
  }

  std::map<int64_t, std::vector<PlannedCollective>> shifted{{r0, {{r->members[0].ops[1], gather}}},
                                                            {r1, {{r->members[1].ops[2], gather}}}};
  Divergence d = order.checkInsertions(r->ring_id, shifted);
  CHECK_FALSE(d.ok);
  CHECK(d.rank == r1);
  CHECK(d.ref_rank == r0);
  CHECK(d.k == 1);
  CHECK(d.what.find("all-gather float32[256]") != std::string::npos);

  std::map<int64_t, std::vector<PlannedCollective>> only_one{{r0, {{r->members[0].ops[0], gather}}}};
  Divergence d1 = order.checkInsertions(r->ring_id, only_one);
  CHECK_FALSE(d1.ok);
  CHECK(d1.rank == r1);
  CHECK(d1.k == 0);

  // Reordering: the same new order on both members agrees; on one only it diverges (if the two
  // swapped collectives differ).
  auto swapped = [](std::vector<const Op*> v) {
    std::swap(v[0], v[2]);
    return v;
  };
  std::map<int64_t, std::vector<const Op*>> both{{r0, swapped(r->members[0].ops)}, {r1, swapped(r->members[1].ops)}};
  CHECK(order.checkOrder(r->ring_id, both).ok);
  if (!(signatureOf(*r->members[0].ops[0]) == signatureOf(*r->members[0].ops[2]))) {
    Divergence d2 = order.checkOrder(r->ring_id, {{r1, swapped(r->members[1].ops)}});
    CHECK_FALSE(d2.ok);
    CHECK(d2.rank == r1);
    CHECK(d2.k == 0);
  }
}

TEST_CASE("a ring order built from known issue lists is the one a walk builds", "[analysis][ring]") {
  auto job = tp2dp2();
  IssueLists lists;
  for (const auto& p : job->programs) lists.push_back(collectivesByRing(*p));
  const RingOrder walked(*job), given(*job, lists);
  REQUIRE(given.rings().size() == walked.rings().size());
  for (size_t i = 0; i < walked.rings().size(); ++i) {
    const Ring &a = walked.rings()[i], &b = given.rings()[i];
    CHECK(a.ring_id == b.ring_id);
    CHECK(a.group == b.group);
    REQUIRE(a.members.size() == b.members.size());
    for (size_t m = 0; m < a.members.size(); ++m) CHECK(a.members[m].ops == b.members[m].ops);
    REQUIRE(a.issuers.size() == b.issuers.size());
    for (size_t m = 0; m < a.issuers.size(); ++m) CHECK(a.issuers[m].program == b.issuers[m].program);
  }
  size_t placed = 0;
  for (const auto& p : job->programs)
    for (const Op& op : p->blocks[0]->ops) {
      auto x = walked.placeOf(op), y = given.placeOf(op);
      REQUIRE(x.has_value() == y.has_value());
      if (!x) continue;
      CHECK(x->ring_id == y->ring_id);
      CHECK(x->k == y->k);
      ++placed;
    }
  CHECK(placed > 0);
}
