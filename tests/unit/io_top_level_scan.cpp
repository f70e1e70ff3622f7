// The scan that splits a job into its programs for parallel loading: it must find exactly the
// elements of "programs" and give up (nullopt, so that the full parse reports the problem) on
// anything surprising.
#include <catch2/catch.hpp>

#include <string>

#include "io/top_level_scan.h"

using spopt::scanTopLevel;

namespace {
std::string element(const std::string& text, const spopt::Span& s) { return text.substr(s.begin, s.end - s.begin); }
}  // namespace

TEST_CASE("scanTopLevel finds each program of the programs array", "[io]") {
  std::string text = R"({"format":"sp-opt.program", "x":{"programs":[1]} ,
    "programs" : [ {"rank":0,"s":"a\"}]"} , {"rank":1} ],"after":[{}]}  )";
  auto top = scanTopLevel(text);
  REQUIRE(top);
  REQUIRE(top->elements.size() == 2);
  CHECK(element(text, top->elements[0]) == R"({"rank":0,"s":"a\"}]"})");
  CHECK(element(text, top->elements[1]) == R"({"rank":1})");
  CHECK(element(text, top->programs) == R"([ {"rank":0,"s":"a\"}]"} , {"rank":1} ])");
}

TEST_CASE("scanTopLevel gives up on what the full parse must report", "[io]") {
  for (std::string bad : {
           R"({"programs":[{}]} x)",            // trailing content
           R"({"programs":[{}]}{})",            // a second document
           R"({"programs":[{},]})",             // trailing comma in the array
           R"({"programs":[{}],})",             // trailing comma in the object
           R"({"programs":[{}], "programs":[]})",  // the key twice
           R"({"a":1})",                        // no programs
           R"({"programs":[{"a":"unterminated}]})",
           R"([{"programs":[]}])",              // not an object
           "",
       }) {
    INFO(bad);
    CHECK_FALSE(scanTopLevel(bad));
  }
}

TEST_CASE("scanTopLevel accepts an empty programs array", "[io]") {
  auto top = scanTopLevel("{\n\"programs\": [ ]\n}\n");
  REQUIRE(top);
  CHECK(top->elements.empty());
}

TEST_CASE("scanTopLevel tracks strings and escapes across its 64-byte steps", "[io]") {
  // Escapes and brackets inside strings, placed at every offset around the 64-byte boundaries.
  for (size_t pad = 0; pad < 130; ++pad) {
    std::string program = "{\"k\":\"" + std::string(pad, 'x') + "\\\\\\\"]}[\\\\\",\"v\":[[{}],\"\\\"\"]}";
    std::string text = "{\"programs\":[" + program + "," + program + "]}";
    auto top = scanTopLevel(text);
    INFO(pad);
    REQUIRE(top);
    REQUIRE(top->elements.size() == 2);
    CHECK(element(text, top->elements[0]) == program);
    CHECK(element(text, top->elements[1]) == program);
  }
}
