// PIR text import: Paddle's fusion test program and the PIR parser's own test cases.
#include <catch2/catch.hpp>

#include "test_files.h"
#include <fstream>
#include <sstream>

#include "io/loader.h"
#include "io/pir/pir_text.h"
#include "pir_helpers.h"
#include "support/error.h"
#include "verify/verifier.h"

using namespace spopt;

static const std::string kDir = std::string(SPOPT_SOURCE_DIR) + "/testdata/pir/real/";

static std::string textError(const std::string& text) {
  try {
    pir::pirTextToProgram(text, "p.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

static const pir::ojson& opOfType(const pir::ojson& program, const std::string& type) {
  for (const auto& op : program["blocks"][0]["ops"])
    if (op["type"] == type) return op;
  FAIL("no op " << type);
  static pir::ojson none;
  return none;
}

TEST_CASE("Paddle's fusion test program imports as both ranks of a two-rank ring and validates", "[pir]") {
  pir::ojson program = pir::readPirText(kDir + "fuse_allreduce_split_test_all_reduce.pirtxt");
  const auto& ar = opOfType(program, "pd_op.all_reduce_");
  CHECK(ar["inputs"]["in0"] == pir::ojson::array({"v50"}));
  CHECK(ar["outputs"]["out0"] == pir::ojson::array({"v57"}));
  CHECK(ar["attrs"]["ring_id"] == 36);
  CHECK(ar["attrs"]["reduce_type"] == 0);
  CHECK(ar["pir"]["attr_types"]["ring_id"] == "int32");
  CHECK(ar["dist_attr"]["execution_stream"] == "auto_parallel_mp");
  const auto& split = opOfType(program, "pd_op.split_with_num");
  CHECK(split["inputs"]["in1"] == pir::ojson::array({"v64"}));
  CHECK(split["attrs"]["num"] == 2);
  const auto& full = opOfType(program, "pd_op.full");
  CHECK(full["attrs"]["value"] == 0);
  CHECK(full["pir"]["attr_types"]["value"] == "float32");
  CHECK(full["attrs"]["place"] == "cpu");
  CHECK(full["attrs"]["shape"] == pir::ojson::array({1}));
  CHECK(opOfType(program, "builtin.slice")["attrs"]["index"] == 0);

  auto job = loadJobFromText(test::pirJobText({program, program}, {{36, {0, 1}}}), "job.json");
  CHECK(verifyJob(*job).empty());
  const Program& p = *job->programs[1];
  // Values Paddle names keep their names: a parameter's, a data op's.
  CHECK(p.blocks[0]->lookup("v2") == nullptr);
  CHECK(p.blocks[0]->lookup("input") != nullptr);
  const Var* w = p.blocks[0]->lookup("linear_0.w_0");
  REQUIRE(w);
  CHECK(w->persistable);
  CHECK(w->shape == std::vector<int64_t>{8192, 28672});
  CHECK(w->dtype == DType::BFloat16);
  const Var* parts = p.blocks[0]->lookup("v65");  // vec of two tensors
  REQUIRE(parts);
  CHECK(parts->shape == std::vector<int64_t>{2});
  const Var* chunk = p.blocks[0]->lookup("v66");
  CHECK(chunk->shape == std::vector<int64_t>{2048, 1, 8192});
}

// The parser's test file: "//CHECK attribute|type|program" sections ending in "//END".
TEST_CASE("every case of the PIR parser's own test file parses", "[pir]") {
  std::istringstream in(spopt::test::readFileBytes(kDir + "pir_parser_test_text.txt"));
  std::string line, kind, body;
  int attributes = 0, types = 0, programs = 0;
  while (std::getline(in, line)) {
    if (line.rfind("//CHECK ", 0) == 0) {
      kind = line.substr(8);
      body.clear();
    } else if (line.rfind("//END", 0) == 0) {
      INFO(kind << ": " << body);
      if (kind == "attribute") {
        CHECK_NOTHROW(pir::parsePirTextAttribute(body, "case"));
        ++attributes;
      } else if (kind == "type") {
        CHECK_NOTHROW(pir::parsePirTextType(body, "case"));
        ++types;
      } else if (kind == "program") {
        auto job = loadJobFromText(test::pirJobText({pir::pirTextToProgram(body, "case")}), "job.json");
        CHECK(verifyJob(*job).empty());
        CHECK(job->programs[0]->blocks[0]->ops.size() == 3);
        ++programs;
      }
      kind.clear();
    } else if (!kind.empty()) {
      body += line + "\n";
    }
  }
  CHECK(attributes == 9);
  CHECK(types == 7);
  CHECK(programs == 1);
}

TEST_CASE("PIR text attribute and type spellings", "[pir]") {
  pir::ojson t;
  CHECK(pir::parsePirTextAttribute("[(Double)1,(Int64)0,\"1\"]", "a", &t) == pir::ojson::parse("[1,0,\"1\"]"));
  CHECK(t == pir::ojson::parse("[\"float64\",\"int64\",\"str\"]"));
  CHECK(pir::parsePirTextAttribute("[(Float)inf,(Float)-inf]", "a", &t) == pir::ojson::parse("[\"inf\",\"-inf\"]"));
  CHECK(t == "array<float32>");
  CHECK(pir::parsePirTextAttribute("(pd_op.DataLayout)Undefined(AnyLayout)", "a", &t) == "Undefined(AnyLayout)");
  CHECK(t == "layout");
  CHECK(pir::parsePirTextAttribute("(pd_op.Place)Place(gpu:0)", "a", &t) == "gpu:0");
  CHECK(pir::parsePirTextAttribute("[\"\\\"\",\"\\\\\"\"]", "a") == pir::ojson::parse(R"(["\"", "\\\""])"));
  CHECK(pir::parsePirTextAttribute("[]", "a", &t) == pir::ojson::array());
  CHECK(t == "array");
  CHECK(pir::parsePirTextType("vec[vec[i8,bf16],vec[]]", "t") == "vec[vec[i8,bf16],vec[]]");
}

TEST_CASE("bad PIR text fails with one line naming line:column", "[pir]") {
  CHECK(textError("{\n (%1) = \"pd_op.relu\" (%0) {} : (builtin.tensor<2xf32>) -> builtin.tensor<2xf32>\n}") ==
        "p.txt: 2:23: dangling value %0: no op before this one defines it");
  CHECK(textError("{\n (%1) = \"pd_op.full\" () {value:(Float)0} : () -> builtin.tensor<2xf32>\n") ==
        "p.txt: 3:1: missing '}' at the end of the program");
  CHECK(textError("{\n (%1) = \"pd_op.full\" () {value:(Int32)x} : () -> builtin.tensor<2xf32>\n}") ==
        "p.txt: 2:39: (Int32) needs an integer, found \"x\"");
  CHECK(textError("{\n (%1) = \"pd_op.full\" () {} : () -> builtin.tensor<2xi8>\n}") ==
        "p.txt: 2:36: element type \"i8\" of builtin.tensor<2xi8> has no format v1 dtype (f32 f64 f16 bf16 i32 i64 b u8)");
  CHECK(textError("{\n (%1) = \"pd_op.full\" () {} : () -> builtin.tensor<2xf32>\n (%1) = \"pd_op.full\" () {} : () -> builtin.tensor<2xf32>\n}") ==
        "p.txt: 3:3: value %1 is defined twice");
  CHECK(textError("{\n (%1) = \"pd_op.full\" () {} : () -> builtin.tensor<2xf32>, builtin.tensor<2xf32>\n}") ==
        "p.txt: 2:36: 1 results but 2 result types");
  CHECK(textError("{\n (%1) = \"pd_op.full\" () {x:\"abc} : () -> builtin.tensor<2xf32>\n}") ==
        "p.txt: 2:28: unterminated string (a string must not span lines)");
}

TEST_CASE("PIR text written back from the imported fusion program is the program Paddle printed", "[pir]") {
  std::string original = spopt::test::readFileBytes(kDir + "fuse_allreduce_split_test_all_reduce.pirtxt");
  pir::ojson program = pir::pirTextToProgram(original, "in.pirtxt");
  std::string back = pir::writePirText(program, "job.json");
  CHECK(back == original);
  // It reads back to the same program, and an edit shows in the text.
  CHECK(pir::pirTextToProgram(back, "back.pirtxt") == program);
  for (auto& op : program["blocks"][0]["ops"])
    if (op["type"] == "builtin.slice") op["attrs"]["index"] = 1;
  CHECK(pir::writePirText(program, "job.json").find("{index:(Int32)1,") != std::string::npos);
}

TEST_CASE("the parser test program and null operands survive a text round trip", "[pir]") {
  std::string text =
      "{\n    (%1) = \"pd_op.full\" () {dtype:(pd_op.DataType)float32,place:(pd_op.Place)Place(gpu:0),"
      "shape:(pd_op.IntArray)[2,3],value:(Double)1.5} : () -> builtin.tensor<2x3xf32>\n"
      "    (%2) = \"pd_op.foo\" (%1, <<NULL VALUE>>) {s:\"a\\\"b\",x:[(Float)inf,(Int64)7]} : "
      "(builtin.tensor<2x3xf32>, <<NULL TYPE>>) -> vec[builtin.tensor<2x3xf32>]\n}\n";
  pir::ojson program = pir::pirTextToProgram(text, "t.pirtxt");
  CHECK(program["blocks"][0]["ops"][1]["inputs"]["in1"] == pir::ojson::array());
  CHECK(pir::writePirText(program, "job.json") == text);
}

TEST_CASE("deeply nested PIR attributes and types are refused, not a stack overflow", "[pir]") {
  std::string deep(100000, '[');
  CHECK_THROWS_WITH(pir::parsePirTextAttribute(deep, "a"), "a: 1:65: attributes or types nested more than 64 deep");
  std::string vec;
  for (int i = 0; i < 100000; ++i) vec += "vec[";
  CHECK_THROWS_AS(pir::parsePirTextType(vec, "t"), InputError);
}
