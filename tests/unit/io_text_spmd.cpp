// The SPMD shorthand of the text form (io/text_spmd.h, docs/text-format.md): a `rank A..B`
// section reads as the same programs written out rank by rank, and bad shorthand is one
// FILE:LINE:COL line.
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "io/text_writer.h"
#include "support/error.h"

using namespace spopt;

namespace {

std::string printed(std::string_view text) { return jobToText(*loadJobFromText(text, "t.sptxt")); }

std::string spmdErrorOf(std::string_view text) {
  try {
    loadJobFromText(text, "t.sptxt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kHeader = "sp-opt.program text 1\nworld_size 2\ngroup ring_id=0 ranks=[0,1]\n";

// One rank of the fuse pattern, written out: the kept chunk, an attribute and one op differ.
std::string writtenOut(int rank) {
  std::string r = std::to_string(rank);
  std::string s = "rank " + r + " fetch=[z] {\n  block 0 {\n";
  s += "    var y : float32[8,4]\n    var y_0 : float32[4,4]\n    var y_1 : float32[4,4]\n    var z : float32[4,4]\n";
  if (rank == 1) s += "    var w : float32[4,4]\n";
  s += "    {Out=[y_0, y_1]} = split(X=[y]) {axis=0, num=2}\n";
  s += "    {Out=[z]} = scale(X=[y_" + r + "]) {scale=" + (rank == 0 ? "2.0" : "1.0") + ", bias=" + r + "}\n";
  if (rank == 1) s += "    {Out=[w]} = relu(X=[z])\n";
  return s + "  }\n}\n";
}

const char* kShorthand = R"(rank 0..1 fetch=[z] {
  block 0 {
    var y : float32[8,4]
    var y_0 : float32[4,4]
    var y_1 : float32[4,4]
    var z : float32[4,4]
    rank 1: var w : float32[4,4]
    {Out=[y_0, y_1]} = split(X=[y]) {axis=0, num=2}
    {Out=[z]} = scale(X=[y_$rank]) {scale=$rank{0: 2.0, *: 1.0}, bias=$rank}
    rank 1: {Out=[w]} = relu(X=[z])
  }
}
)";

}  // namespace

TEST_CASE("SPMD shorthand: rank A..B reads as the programs written out", "[io][text][spmd]") {
  std::string expanded = printed(std::string(kHeader) + kShorthand);
  CHECK(expanded == printed(std::string(kHeader) + writtenOut(0) + writtenOut(1)));
  // A name chosen per rank, and a one-rank section, read the same way.
  std::string chosen = kShorthand;
  chosen.replace(chosen.find("y_$rank"), 7, "$rank{0: y_0, 1..3: y_1}");
  CHECK(printed(std::string(kHeader) + chosen) == expanded);
  CHECK(printed(std::string(kHeader) + "rank 0 {\n  block 0 {\n    var a_$rank : float32[1]\n  }\n}\n") ==
        printed(std::string(kHeader) + "rank 0 {\n  block 0 {\n    var a_0 : float32[1]\n  }\n}\n"));
}

TEST_CASE("SPMD shorthand: bad shorthand is one FILE:LINE:COL line", "[io][text][spmd]") {
  auto with = [&](std::string from, std::string to) {
    std::string s = std::string(kHeader) + kShorthand;
    s.replace(s.find(from), from.size(), to);
    return spmdErrorOf(s);
  };
  CHECK(with("rank 0..1", "rank 1..0") == "t.sptxt:4:6: empty rank range 1..0 (the first rank comes first)");
  CHECK(with("rank 0..1", "rank 0..") == "t.sptxt:4:9: expected a rank number after \"..\", found \" \"");
  CHECK(with("rank 0..1", "rank 0..99999999") == "t.sptxt:4:9: rank number out of range");
  CHECK(with("rank 0..1", "rank 0..70000") == "t.sptxt:4:6: rank 0..70000 spans more than 65536 ranks");
  CHECK(with("rank 0..1", "rank 0..2") == "t.sptxt:4:6: rank 0..2 goes past world_size 2");
  CHECK(with("{0: 2.0, *: 1.0}", "{0: 2.0}") ==
        "t.sptxt:12:43: $rank{...} has no entry for rank 1 (add \"*: ...\" for the others) (reading rank 1 of rank 0..1)");
  CHECK(with("{0: 2.0, *: 1.0}", "{0: 2.0, 0..1: 1.0}") ==
        "t.sptxt:12:57: rank 0 has two entries in $rank{...} (reading rank 0 of rank 0..1)");
  CHECK(with("bias=$rank", "bias=$rnk") == "t.sptxt:12:71: unknown \"$rnk\" (the shorthand has $rank and $rank{R: X, *: X}) (reading rank 0 of rank 0..1)");
  CHECK(with("y_$rank]", "$rank{0: $rank{0: y_0}, *: y_1}]") ==
        "t.sptxt:12:35: $rank{...} inside $rank{...} (reading rank 0 of rank 0..1)");
  CHECK(with("rank 1: var w", "rank 2: var w") == "t.sptxt:10:10: rank 2 is not in this section (rank 0..1) (reading rank 0 of rank 0..1)");
  CHECK(with("rank 1: var w", "rank 1: vax w") == "t.sptxt:10:13: expected \"var\" or an op after \"rank ...:\", found \"vax\" (reading rank 0 of rank 0..1)");
  // An error on a line of rank 1 only says which rank was being read.
  CHECK(with("relu(X=[z])", "relu(X=[q])") ==
        "t.sptxt:13:33: var \"q\" is not declared in block 0 or its ancestors (reading rank 1 of rank 0..1)");
  CHECK(spmdErrorOf(std::string(kHeader) + "mesh #m = $rank\n") == "t.sptxt:4:11: expected a JSON value, found \"$rank\"");
  CHECK(spmdErrorOf(std::string(kHeader) + "dist #d = {chunk_id=$rank}\n") == "t.sptxt:4:21: $rank is only defined inside a rank section");
}

TEST_CASE("print --spmd: identical consecutive ranks fold, and read back to the same job", "[io][text][spmd]") {
  std::string same = std::string(kHeader) + "rank 0..1 fetch=[z] {\n  block 0 {\n    var z : float32[2]\n  }\n}\n";
  auto job = loadJobFromText(same, "t.sptxt");
  TextWriteOptions fold;
  fold.fold_ranks = true;
  std::string folded = jobToText(*job, fold);
  CHECK(folded.find("\nrank 0..1 fetch=[z] {\n  block 0 parent=-1 {\n") != std::string::npos);
  CHECK(printed(folded) == jobToText(*job));
  // Ranks that differ stay apart.
  auto differing = loadJobFromText(std::string(kHeader) + kShorthand, "t.sptxt");
  CHECK(jobToText(*differing, fold) == jobToText(*differing));
}
