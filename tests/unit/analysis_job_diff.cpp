#include <catch2/catch.hpp>

#include "analysis/job_diff.h"
#include "diff_helpers.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::test;

namespace {
const std::string kDiffVars = join({var("a"), var("b"), var("c"), var("d")});

std::vector<std::string> kinds(const RankDiff& r) {
  std::vector<std::string> out;
  for (const OpEntry& e : r.ops) {
    const Op* op = e.kind == OpEntry::Removed ? r.beforeOp(e) : r.afterOp(e);
    out.push_back(std::string(e.kind == OpEntry::Removed ? "-" : e.kind == OpEntry::Added ? "+" : "~") + std::string(op->type));
  }
  return out;
}
}  // namespace

TEST_CASE("a job against itself is the same", "[diff]") {
  auto a = makeJob({{kDiffVars, join({op("relu", "a", "b"), op("gelu", "b", "c")})}, {kDiffVars, op("relu", "a", "b")}});
  auto b = makeJob({{kDiffVars, join({op("relu", "a", "b"), op("gelu", "b", "c")})}, {kDiffVars, op("relu", "a", "b")}});
  JobDiff d = diffJobs(*a, *b);
  CHECK(d.same());
  REQUIRE(d.ranks.size() == 2);
  CHECK(d.ranks[0].unchanged_ops == 2);
  CHECK(summarizeCounts(d.totalCountsByType()).empty());
}

TEST_CASE("removed ops are listed where they stood, before the ops added in their place", "[diff]") {
  auto before = makeJob({{kDiffVars, join({op("relu", "a", "b"), op("c_allreduce_sum", "b", "c", R"({"ring_id":0})"),
                                       op("split", "c", "d", R"({"num":1})")})}});
  auto after = makeJob({{join({var("a"), var("b"), var("d")}),
                         join({op("relu", "a", "b"), op("c_reducescatter", "b", "d", R"({"ring_id":0,"nranks":1})")})}});
  JobDiff d = diffJobs(*before, *after);
  REQUIRE(d.ranks.size() == 1);
  const RankDiff& r = d.ranks[0];
  CHECK(kinds(r) == std::vector<std::string>{"-c_allreduce_sum", "-split", "+c_reducescatter"});
  CHECK(summarizeCounts(r.countsByType()) == "-1 c_allreduce_sum, -1 split, +1 c_reducescatter");
  REQUIRE(r.vars.size() == 1);
  CHECK(r.vars[0].kind == VarEntry::Removed);
  CHECK(r.vars[0].before->name == "c");
  CHECK_FALSE(d.same());
}

TEST_CASE("changed attributes, slots and dist attrs are reported by path", "[diff]") {
  auto before = makeJob({{kDiffVars, op("scale", "a", "b", R"({"scale":1.0,"bias":[1, 2],"gone":true})")}});
  auto after = makeJob({{kDiffVars, op("scale", "c", "b", R"({"scale":1,"bias":[1,2],"new":"x"})")}});
  JobDiff d = diffJobs(*before, *after);
  const RankDiff& r = d.ranks[0];
  REQUIRE(r.ops.size() == 1);
  const auto& changes = r.ops[0].changes;
  REQUIRE(changes.size() == 4);
  CHECK(changes[0].what == "inputs.X");
  CHECK(*changes[0].before == R"(["a"])");
  CHECK(*changes[0].after == R"(["c"])");
  CHECK(changes[1].what == "attrs.scale");  // 1.0 and 1 differ: the format keeps them apart
  CHECK(changes[2].what == "attrs.gone");
  CHECK_FALSE(changes[2].after.has_value());
  CHECK(changes[3].what == "attrs.new");
  CHECK_FALSE(changes[3].before.has_value());  // "bias" differs only in whitespace: not a change
}

TEST_CASE("var shape, dtype, persistable, dist attr and unknown keys are compared", "[diff]") {
  std::string dist = R"(,"dist_attr":{"dims_mapping":[0,-1]})";
  auto before = makeJob({{join({var("a", "[4,4]", dist), var("b"), var("c", "[2]", R"(,"note":1)")}), op("relu", "a", "b")}});
  auto after = makeJob({{join({var("a", "[4,4]", R"(,"dist_attr":{"dims_mapping":[-1,-1]})"),
                               var("b", "[4,8]", R"(,"persistable":true)"), var("c", "[2]", R"(,"note":2)")}),
                          op("relu", "a", "b")}});
  JobDiff d = diffJobs(*before, *after);
  const RankDiff& r = d.ranks[0];
  CHECK(r.ops.empty());
  REQUIRE(r.vars.size() == 3);
  CHECK(r.vars[0].changes.at(0).what == "dist_attr.dims_mapping");
  REQUIRE(r.vars[1].changes.size() == 2);
  CHECK(r.vars[1].changes[0].what == "shape");
  CHECK(*r.vars[1].changes[0].after == "[4,8]");
  CHECK(r.vars[1].changes[1].what == "persistable");
  CHECK(r.vars[2].changes.at(0).what == "note");
}

TEST_CASE("kept ops whose order changed are reported moved", "[diff]") {
  auto before = makeJob({{kDiffVars, join({op("relu", "a", "b"), op("gelu", "a", "c"), op("scale", "a", "d")})}});
  auto after = makeJob({{kDiffVars, join({op("scale", "a", "d"), op("relu", "a", "b"), op("gelu", "a", "c")})}});
  JobDiff d = diffJobs(*before, *after);
  const RankDiff& r = d.ranks[0];
  REQUIRE(r.ops.size() == 1);  // the longest run in order (relu, gelu) stays; scale moved
  CHECK(r.ops[0].kind == OpEntry::Changed);
  CHECK(r.ops[0].moved);
  CHECK(r.afterOp(r.ops[0])->type == "scale");
  CHECK(r.ops[0].changes.empty());
  CHECK(summarizeCounts(r.countsByType()) == "~1 scale");
}

TEST_CASE("a rank only one job has is all removed or all added", "[diff]") {
  auto before = makeJob({{kDiffVars, op("relu", "a", "b")}});
  auto after = makeJob({{kDiffVars, op("relu", "a", "b")}, {kDiffVars, op("gelu", "a", "b")}});
  JobDiff d = diffJobs(*before, *after);
  REQUIRE(d.ranks.size() == 2);
  CHECK(d.ranks[0].same());
  CHECK(d.ranks[1].before == nullptr);
  CHECK(kinds(d.ranks[1]) == std::vector<std::string>{"+gelu"});
  CHECK(d.ranks[1].program_changes.at(0).what == "program");
  // The groups and world size differ too.
  REQUIRE(d.job_changes.size() == 2);
  CHECK(d.job_changes[0].what == "world_size");
  CHECK(d.job_changes[1].what == "process_groups[ring 0].ranks");
}

TEST_CASE("the rank option limits the comparison and must name a rank", "[diff]") {
  auto a = makeJob({{kDiffVars, op("relu", "a", "b")}, {kDiffVars, op("relu", "a", "b")}});
  auto b = makeJob({{kDiffVars, op("relu", "a", "b")}, {kDiffVars, op("gelu", "a", "b")}});
  DiffOptions opts;
  opts.rank = 0;
  CHECK(diffJobs(*a, *b, opts).same());
  opts.rank = 1;
  CHECK_FALSE(diffJobs(*a, *b, opts).same());
  opts.rank = 5;
  CHECK_THROWS_AS(diffJobs(*a, *b, opts), InputError);
}

TEST_CASE("bytes moved: payload and ring traffic", "[diff][comm]") {
  // 4 ranks, a [8,8] float32 (256 B) all-reduce before, a reduce-scatter of it after.
  std::string vars = join({var("a", "[8,8]"), var("b", "[8,8]"), var("c", "[2,8]")});
  std::vector<std::pair<std::string, std::string>> before(4, {vars, op("all_reduce", "a", "b", R"({"ring_id":0})", "x", "out")});
  std::vector<std::pair<std::string, std::string>> after(4, {vars, op("reduce_scatter", "a", "c", R"({"ring_id":0,"nranks":4})", "x", "out")});
  auto b = makeJob(before);
  auto a = makeJob(after);
  JobDiff d = diffJobs(*b, *a);
  CHECK(d.ranks[2].comm_before.payload_bytes == 256);
  CHECK(d.ranks[2].comm_after.payload_bytes == 256);
  CHECK(d.ranks[2].comm_before.ring_bytes == 384);  // 2 (n-1)/n x 256
  CHECK(d.ranks[2].comm_after.ring_bytes == 192);   // (n-1)/n x 256
  CHECK(d.ranks[2].comm_after.by_kind.at(CollectiveKind::ReduceScatter) == 1);
}

TEST_CASE("compactJson drops whitespace outside strings only", "[diff]") {
  CHECK(compactJson(R"({ "a" : [1, 2], "s": "x y\" z" })") == R"({"a":[1,2],"s":"x y\" z"})");
}

TEST_CASE("attribute values compare as JSON values: float spellings agree, integers and floats differ", "[diff]") {
  auto with = [](const char* attrs) { return makeJob({{kDiffVars, op("scale", "a", "b", attrs)}}); };
  CHECK(diffJobs(*with(R"({"scale":-1e+09})"), *with(R"({"scale":-1000000000.0})")).same());
  CHECK(diffJobs(*with(R"({"scale":[0.5,2E0]})"), *with(R"({"scale":[5e-1,2.0]})")).same());
  CHECK_FALSE(diffJobs(*with(R"({"scale":1})"), *with(R"({"scale":1.0})")).same());
  CHECK_FALSE(diffJobs(*with(R"({"scale":0.5})"), *with(R"({"scale":0.25})")).same());
  CHECK_FALSE(diffJobs(*with(R"({"scale":{"a":1}})"), *with(R"({"scale":{"b":1}})")).same());
}
