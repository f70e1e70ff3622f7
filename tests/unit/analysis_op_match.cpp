#include <catch2/catch.hpp>

#include "analysis/op_match.h"
#include "diff_helpers.h"

using namespace spopt;
using namespace spopt::test;

namespace {
struct Matched {
  OpOrder before, after;
  OpMatching m;
  Matched(const Job& b, const Job& a) : before(*b.programs[0]), after(*a.programs[0]), m(matchOps(before, after)) {}
  uint32_t afterOf(uint32_t b) const { return m.after_of_before[b]; }
};
const std::string kMatchVars = join({var("a"), var("b"), var("c"), var("d"), var("e")});
}  // namespace

TEST_CASE("ops pair by their outputs, whatever their position", "[diff][match]") {
  auto before = makeJob({{kMatchVars, join({op("relu", "a", "b"), op("gelu", "b", "c"), op("scale", "c", "d")})}});
  auto after = makeJob({{kMatchVars, join({op("scale", "a", "d"), op("relu", "a", "b")})}});
  Matched m(*before, *after);
  CHECK(m.afterOf(0) == 1);                  // relu -> b kept, now second
  CHECK(m.afterOf(1) == OpMatching::kNone);  // gelu removed
  CHECK(m.afterOf(2) == 0);                  // scale -> d kept, rewired
  CHECK(m.m.before_of_after[0] == 2);
}

TEST_CASE("an op whose outputs were renamed pairs by type and inputs", "[diff][match]") {
  auto before = makeJob({{kMatchVars, join({op("relu", "a", "b"), op("gelu", "b", "c")})}});
  auto after = makeJob({{kMatchVars, join({op("relu", "a", "e"), op("gelu", "e", "c")})}});
  Matched m(*before, *after);
  CHECK(m.afterOf(0) == 0);  // by inputs (X=a)
  CHECK(m.afterOf(1) == 1);  // by outputs (Out=c)
}

TEST_CASE("a different op type writing the same var does not pair", "[diff][match]") {
  auto before = makeJob({{kMatchVars, op("c_allreduce_sum", "a", "b", R"({"ring_id":0})")}});
  auto after = makeJob({{kMatchVars, op("c_reducescatter", "a", "b", R"({"ring_id":0,"nranks":1})")}});
  Matched m(*before, *after);
  CHECK(m.afterOf(0) == OpMatching::kNone);
}

TEST_CASE("ops with the same key pair in program order", "[diff][match]") {
  // In-place updates: three ops write `a`; the k-th pairs with the k-th.
  auto before = makeJob({{kMatchVars, join({op("scale", "a", "a", R"({"scale":1})"), op("scale", "a", "a", R"({"scale":2})"),
                                       op("scale", "a", "a", R"({"scale":3})")})}});
  auto after = makeJob({{kMatchVars, join({op("scale", "a", "a", R"({"scale":1})"), op("scale", "a", "a", R"({"scale":2})")})}});
  Matched m(*before, *after);
  CHECK(m.afterOf(0) == 0);
  CHECK(m.afterOf(1) == 1);
  CHECK(m.afterOf(2) == OpMatching::kNone);
}

TEST_CASE("ops that name no vars pair by type and attributes", "[diff][match]") {
  auto before = makeJob({{kMatchVars, join({op("barrier", "", "", R"({"id":1})"), op("barrier", "", "", R"({"id":2})")})}});
  auto after = makeJob({{kMatchVars, join({op("barrier", "", "", R"({"id":2})")})}});
  Matched m(*before, *after);
  CHECK(m.afterOf(0) == OpMatching::kNone);
  CHECK(m.afterOf(1) == 0);
}

TEST_CASE("names that concatenate alike do not collide", "[diff][match]") {
  auto before = makeJob({{join({var("a"), var("bc"), var("ab"), var("c")}), op("split", "a", "ab,c")}});
  auto after = makeJob({{join({var("a"), var("bc"), var("ab"), var("c")}), op("split", "c", "a,bc")}});
  Matched m(*before, *after);
  CHECK(m.afterOf(0) == OpMatching::kNone);
}
