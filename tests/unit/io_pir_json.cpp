// PIR JSON import/export: the real PP-OCRv5 file maps into a valid job and back to the same JSON
// value; malformed files fail with one pointed line.
#include <catch2/catch.hpp>

#include "test_files.h"
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/loader.h"
#include "io/writer.h"
#include "io/pir/pir_json.h"
#include "pir_helpers.h"
#include "support/error.h"
#include "verify/verifier.h"

using namespace spopt;

static const std::string kReal = std::string(SPOPT_SOURCE_DIR) + "/testdata/pir/real/ppocrv5_mobile_det_inference.json";

static std::string importError(const std::string& text) {
  try {
    pir::pirJsonToProgram(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST_CASE("the real PIR JSON imports, validates and exports back to the same JSON value", "[pir]") {
  pir::ojson program = pir::readPirJson(kReal);
  auto job = loadJobFromText(test::pirJobText({program}), "ppocr.json");
  REQUIRE(job->programs.size() == 1);
  const Program& p = *job->programs[0];
  CHECK(p.blocks[0]->ops.size() == 668);
  CHECK(p.fetch == std::vector<std::string_view>{"v683"});
  // Parameters are persistable vars named after their value id; the parameter name is an attr.
  const Op& first = p.blocks[0]->ops.front();
  CHECK(first.type == "builtin.parameter");
  CHECK(first.attrs.getString("parameter_name") == "conv2d_transpose_1.b_0");
  CHECK(first.out("out0")->persistable);
  CHECK(first.out("out0")->shape == std::vector<int64_t>{1});
  auto errors = verifyJob(*job);
  CHECK(errors.empty());

  // Export reads the job as written: the preserved keys must survive the job writer too.
  pir::ojson written = pir::ojson::parse(jobToString(*job));
  std::string back = pir::writePirJson(written["programs"][0], "job.json");
  CHECK(nlohmann::json::parse(back) == nlohmann::json::parse(spopt::test::readFileBytes(kReal)));
  // Paddle writes compact JSON with sorted keys, and so does the exporter: byte for byte.
  std::string original = spopt::test::readFileBytes(kReal);
  while (!original.empty() && (original.back() == '\n')) original.pop_back();
  CHECK(back == original);
}

TEST_CASE("an op's attributes keep their list: a stop_gradient in \"A\" of an op without \"OA\" stays there", "[pir]") {
  // Found by fuzz-pir-json: the writer put stop_gradient, a result attribute by default, in "OA",
  // which this op does not have, and dropped it.
  const std::string text = spopt::test::readFileBytes(std::string(SPOPT_SOURCE_DIR) +
                                                      "/testdata/fuzz-regressions/pir-json-stop-gradient-in-A");
  auto job = loadJobFromText(test::pirJobText({pir::pirJsonToProgram(text, "f.json")}), "f-job.json");
  pir::ojson written = pir::ojson::parse(jobToString(*job));
  std::string back = pir::writePirJson(written["programs"][0], "f-job.json");
  CHECK(nlohmann::json::parse(back) == nlohmann::json::parse(text));
}

TEST_CASE("PIR JSON ops map to format v1 slots, attrs and kept types", "[pir]") {
  pir::ojson program = pir::readPirJson(kReal);
  const auto& ops = program["blocks"][0]["ops"];
  const pir::ojson* conv = nullptr;
  for (const auto& op : ops)
    if (op["type"] == "pd_op.conv2d") {
      conv = &op;
      break;
    }
  REQUIRE(conv);
  CHECK((*conv)["inputs"].contains("in0"));
  CHECK((*conv)["inputs"].contains("in1"));
  CHECK((*conv)["outputs"]["out0"].size() == 1);
  CHECK((*conv)["attrs"]["strides"] == pir::ojson::array({2, 2}));
  CHECK((*conv)["pir"]["attr_types"]["strides"] == "array<int32>");
  CHECK((*conv)["pir"]["attr_types"]["data_format"] == "str");
  CHECK((*conv)["pir"]["result_attrs"] == pir::ojson::array({"stop_gradient"}));
}

TEST_CASE("bad PIR JSON fails with one line naming the place", "[pir]") {
  std::string good = spopt::test::readFileBytes(kReal);
  CHECK(importError("{\"base_code\":") ==
        "f.json: byte 14: malformed JSON: syntax error while parsing value - unexpected end of input; expected '[', "
        "'{', or a literal");
  CHECK(importError("{\"base_code\":{\"magic\":\"xyz\"},\"program\":{}}") ==
        "f.json: /base_code: \"magic\" must be \"pir\" (not a PIR JSON file)");
  // An unknown compressed key on an op.
  auto doc = nlohmann::json::parse(good);
  doc["program"]["regions"][0]["blocks"][0]["ops"][300]["ZZ"] = 1;
  CHECK(importError(doc.dump()) == "f.json: /program/regions/0/blocks/0/ops/300/ZZ: unknown key \"ZZ\" in an op");
  // A dangling value: an operand no earlier op defines.
  doc = nlohmann::json::parse(good);
  doc["program"]["regions"][0]["blocks"][0]["ops"][300]["I"][0]["%"] = 9999;
  CHECK(importError(doc.dump()) ==
        "f.json: /program/regions/0/blocks/0/ops/300/I/0/%: dangling value %9999: no op before this one defines it");
  // A value defined twice.
  doc = nlohmann::json::parse(good);
  doc["program"]["regions"][0]["blocks"][0]["ops"][300]["O"][0]["%"] = 5;
  CHECK(importError(doc.dump()) == "f.json: /program/regions/0/blocks/0/ops/300/O/0/%: value %5 is defined twice");
  // Control flow regions are refused, not dropped.
  doc = nlohmann::json::parse(good);
  doc["program"]["regions"][0]["blocks"][0]["ops"][300]["regions"] = nlohmann::json::array();
  CHECK(importError(doc.dump()) ==
        "f.json: /program/regions/0/blocks/0/ops/300/regions: ops with regions (control flow: pd_op.if, pd_op.while) are not supported");
  doc = nlohmann::json::parse(good);
  doc["program"]["regions"][0]["blocks"][0]["ops"][300]["#"] = "9.add";
  CHECK(importError(doc.dump()) ==
        "f.json: /program/regions/0/blocks/0/ops/300/#: unknown dialect in op name \"9.add\" (known ids 0-4: builtin pd_op cf custom_op dist)");
}

TEST_CASE("PIR JSON export carries edits a pass made: attrs, streams, new vars and ops", "[pir]") {
  std::string tiny = spopt::test::readFileBytes(std::string(SPOPT_SOURCE_DIR) + "/testdata/pir/tiny_matmul.pirjson");
  pir::ojson program = pir::pirJsonToProgram(tiny, "tiny.json");
  auto& ops = program["blocks"][0]["ops"];
  // An edited attribute keeps its PIR type; a stream set in dist_attr becomes the PIR attribute.
  ops[2]["attrs"]["transpose_y"] = true;
  ops[2]["dist_attr"] = {{"execution_stream", "auto_parallel_mp"}};
  // A new op on a new var (as a pass inserts one): ids continue after the largest, types come from
  // the var, attribute types are inferred from the values.
  program["blocks"][0]["vars"].push_back({{"name", "scaled"}, {"shape", {2, 4}}, {"dtype", "bfloat16"}, {"persistable", false}});
  ops.push_back({{"type", "pd_op.scale"}, {"inputs", {{"in0", {"v3"}}}}, {"outputs", {{"out0", {"scaled"}}}},
                 {"attrs", {{"bias", 0.5}, {"bias_after_scale", true}}}});
  auto out = nlohmann::json::parse(pir::writePirJson(program, "job.json"));
  const auto& pops = out["program"]["regions"][0]["blocks"][0]["ops"];
  REQUIRE(pops.size() == 5);
  CHECK(pops[2]["A"][1] == nlohmann::json::parse(R"({"AT":{"#":"0.a_bool","D":true},"N":"transpose_y"})"));
  auto attrNamed = [](const nlohmann::json& op, const std::string& name) {
    for (const auto& a : op["A"])
      if (a["N"] == name) return a["AT"];
    return nlohmann::json();
  };
  CHECK(attrNamed(pops[2], "execution_stream") == nlohmann::json::parse(R"({"#":"0.a_str","D":"auto_parallel_mp"})"));
  // ... and says the stream was the dist_attr's, so that import takes it out of the attributes.
  CHECK(attrNamed(pops[2], "spopt_dist_attr")["D"] == R"({"dist_attr":{"execution_stream":"auto_parallel_mp"},"stream_attrs_added":true})");
  // The new var keeps its name through the file (PIR numbers values; sp-opt's attribute names it).
  CHECK(pops[4] == nlohmann::json::parse(R"({"#":"1.scale","I":[{"%":3}],
      "O":[{"%":5,"TT":{"#":"0.t_dtensor","D":[{"#":"0.t_bf16"},[2,4],"NCHW",[],0]}}],
      "A":[{"AT":{"#":"0.a_f32","D":0.5},"N":"bias"},{"AT":{"#":"0.a_bool","D":true},"N":"bias_after_scale"},
           {"AT":{"#":"0.a_array","D":[{"#":"0.a_str","D":"scaled"}]},"N":"spopt_result_names"}],
      "OA":[]})"));
  // ... and it reads back as it was.
  pir::ojson again = pir::pirJsonToProgram(out.dump(), "again.json");
  CHECK(again["blocks"][0]["ops"][4]["type"] == "pd_op.scale");
  CHECK(again["blocks"][0]["ops"][4]["outputs"]["out0"][0] == "scaled");
  CHECK(again["blocks"][0]["vars"].back()["name"] == "scaled");
  CHECK(again["blocks"][0]["ops"][2]["dist_attr"] == pir::ojson{{"execution_stream", "auto_parallel_mp"}});
  CHECK_FALSE(again["blocks"][0]["ops"][2]["attrs"].contains("execution_stream"));

  // What PIR JSON cannot say is refused with the place, not written wrong.
  ops[2]["inputs"]["in0"] = {"v2", "v1"};
  try {
    pir::writePirJson(program, "job.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "job.json: /blocks/0/ops/2: input slot \"in0\" holds more than one var (PIR: one value per operand)");
  }
}

TEST_CASE("deeply nested PIR JSON attributes are refused, not a stack overflow", "[pir]") {
  std::string tiny = spopt::test::readFileBytes(std::string(SPOPT_SOURCE_DIR) + "/testdata/pir/tiny_matmul.pirjson");
  auto doc = nlohmann::json::parse(tiny);
  nlohmann::json at = {{"#", "0.a_bool"}, {"D", true}};
  for (int i = 0; i < 40; ++i) at = {{"#", "0.a_array"}, {"D", nlohmann::json::array({at})}};
  doc["program"]["regions"][0]["blocks"][0]["ops"][2]["A"][0]["AT"] = at;
  CHECK_THAT(importError(doc.dump()), Catch::Contains("attributes nested more than 32 deep"));
}

TEST_CASE("PIR JSON nested beyond any real program is refused before parsing", "[pir]") {
  CHECK(importError("{\"base_code\":" + std::string(100000, '[')) == "f.json: byte 141: JSON nested more than 128 deep");
}
