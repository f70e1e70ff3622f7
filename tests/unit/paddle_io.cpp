// ProgramDesc and legacy program text readers/writers (lib/io/paddle).
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>

#include "test_files.h"
#include <fstream>
#include <sstream>

#include "io/paddle/framework.pb.h"
#include "io/paddle/legacy_text.h"
#include "io/paddle/program_desc.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::paddle;
using google::protobuf::util::MessageDifferencer;

namespace {
}  // namespace

TEST_CASE("every real ProgramDesc comes back as the same message", "[paddle]") {
  for (const char* name : {"lite_simple_model.pdmodel", "handwriting_mlp__model__", "lite_mobilenet_v1__model__"}) {
    std::string bytes = spopt::test::readFileBytes(std::string(SPOPT_SOURCE_DIR) + "/testdata/paddle/" + name);
    REQUIRE(!bytes.empty());
    pb::ProgramDesc original;
    REQUIRE(original.ParseFromString(bytes));
    ImportedProgram imported = readProgramDesc(name, bytes);
    std::string written = writeProgramDesc(imported.program, name);
    pb::ProgramDesc back;
    REQUIRE(back.ParseFromString(written));
    INFO(name);
    CHECK(MessageDifferencer::Equals(original, back));
    CHECK(written == bytes);
  }
}

TEST_CASE("attr types, odd dtypes, presence and unknown fields survive", "[paddle]") {
  pb::ProgramDesc desc;
  desc.mutable_version()->set_version(2005000);
  auto* block = desc.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  auto* var = block->add_vars();
  var->set_name("q");
  var->mutable_type()->set_type(pb::VarType::LOD_TENSOR);
  auto* tensor = var->mutable_type()->mutable_lod_tensor()->mutable_tensor();
  tensor->set_data_type(pb::VarType::INT8);
  tensor->add_dims(-1);
  tensor->add_dims(-512);
  var->set_stop_gradient(true);  // persistable left unset: must stay unset
  auto* op = block->add_ops();
  op->set_type("scale");
  auto* in = op->add_inputs();
  in->set_parameter("X");
  in->add_arguments("q");
  auto add = [&](const char* name, pb::AttrType t) {
    auto* a = op->add_attrs();
    a->set_name(name);
    a->set_type(t);
    return a;
  };
  add("i", pb::INT)->set_i(7);
  add("l", pb::LONG)->set_l(7);
  add("f", pb::FLOAT)->set_f(0.1f);
  add("d", pb::FLOAT64)->set_float64(0.1);
  add("nan", pb::FLOAT)->set_f(std::numeric_limits<float>::quiet_NaN());
  add("s", pb::STRING)->set_s(std::string("\xff\x01", 2));  // not UTF-8
  add("b", pb::BOOLEAN)->set_b(false);
  add("is", pb::INTS);  // empty list: its type is all that says what it is
  add("ls", pb::LONGS)->add_longs(1);
  add("blk", pb::BLOCK)->set_block_idx(0);
  auto* sc = add("sc", pb::SCALAR)->mutable_scalar();
  sc->set_type(pb::Scalar::FLOAT64);
  sc->set_r(2.5);
  op->mutable_unknown_fields()->AddVarint(999, 42);

  std::string bytes = desc.SerializeAsString();
  ImportedProgram imported = readProgramDesc("t.pdmodel", bytes);
  const Json& v = imported.program["blocks"][0]["vars"][0];
  CHECK(v["dtype"] == "int32");
  CHECK(v["paddle"]["dtype"] == "INT8");
  CHECK(v["shape"] == Json::array({-1, -1}));
  CHECK(v["paddle"]["persistable"].is_null());
  const Json& o = imported.program["blocks"][0]["ops"][0];
  CHECK(o["attrs"]["f"].dump() == "0.1");
  CHECK(o["paddle"]["attr_types"]["l"] == "LONG");
  CHECK(o["paddle"]["attr_types"]["i"] == "INT");
  CHECK(o["attrs"]["nan"] == "nan");
  CHECK(o["attrs"]["s"]["hex"] == "ff01");
  CHECK(o["paddle"].contains("raw"));  // the unknown field: kept as the op's bytes

  std::string written = writeProgramDesc(imported.program, "t.json");
  pb::ProgramDesc back;
  REQUIRE(back.ParseFromString(written));
  CHECK(written == bytes);
  // NaN != NaN field by field: compare with the NaN attr taken out of both.
  back.mutable_blocks(0)->mutable_ops(0)->mutable_attrs(4)->set_f(0);
  pb::ProgramDesc expected = desc;
  expected.mutable_blocks(0)->mutable_ops(0)->mutable_attrs(4)->set_f(0);
  CHECK(MessageDifferencer::Equals(expected, back));

  // An edited entity is written from its JSON; the untouched rest stays as it was.
  Json edited = imported.program;
  edited["blocks"][0]["vars"][0]["shape"] = Json::array({4, 8});
  edited["blocks"][0]["ops"][0]["attrs"]["i"] = 9;
  pb::ProgramDesc changed;
  REQUIRE(changed.ParseFromString(writeProgramDesc(edited, "t.json")));
  const auto& dims = changed.blocks(0).vars(0).type().lod_tensor().tensor().dims();
  CHECK(std::vector<int64_t>(dims.begin(), dims.end()) == std::vector<int64_t>{4, 8});
  CHECK(changed.blocks(0).vars(0).type().lod_tensor().tensor().data_type() == pb::VarType::INT8);
  CHECK(changed.blocks(0).ops(0).attrs(0).i() == 9);
  CHECK(changed.blocks(0).ops(0).attrs(1).type() == pb::LONG);
}

TEST_CASE("corrupt protobuf names the byte", "[paddle]") {
  std::string bytes = "\x0a\x40\x08\x00";
  CHECK_THROWS_WITH(readProgramDesc("x.pdmodel", bytes), Catch::Contains("byte 0: field 1: length 64 runs past the end"));
}

TEST_CASE("legacy program text: vars, ops, guessed attr types, errors", "[paddle]") {
  std::string text =
      "{ // block 0\n"
      "    persist trainable param w : LOD_TENSOR.shape(4, 8).dtype(float32).stop_gradient(False)\n"
      "    var x : LOD_TENSOR.shape(-1, 4).dtype(int64).stop_gradient(True)\n"
      "    persist var r : RAW)\n"
      "\n"
      "    {Out=['y']} = matmul(inputs={X=['x'], Y=['w']}, alpha = 0.125, names = ['a, b', 'c'], op_device = gpu:0, "
      "op_namescope = /x, y/, op_role = 1, big = 4294967296, flags = [True, False], shape = [], trans_x = False)\n"
      "    c_sync_calc_stream(inputs={X=['y']}, op_role = 0)\n"
      "}\n";
  ImportedProgram p = readLegacyText("t.txt", text);
  const Json& b = p.program["blocks"][0];
  CHECK(b["vars"][0]["persistable"] == true);
  CHECK(b["vars"][0]["paddle"]["is_parameter"] == true);
  CHECK(b["vars"][1]["dtype"] == "int64");
  CHECK(b["vars"][2]["paddle"]["tensor"].is_null());
  const Json& op = b["ops"][0];
  CHECK(op["outputs"]["Out"][0] == "y");
  CHECK(op["attrs"]["alpha"].dump() == "0.125");
  CHECK(op["attrs"]["names"] == Json::array({"a, b", "c"}));
  CHECK(op["attrs"]["op_device"] == "gpu:0");
  CHECK(op["attrs"]["op_namescope"] == "/x, y/");
  CHECK(op["paddle"]["attr_types"]["big"] == "LONG");
  CHECK(op["paddle"]["attr_types"]["flags"] == "BOOLEANS");
  CHECK(op["paddle"]["attr_types"]["trans_x"] == "BOOLEAN");
  CHECK(b["ops"][1]["outputs"].empty());

  CHECK_THROWS_WITH(readLegacyText("t.txt", "{ // block 0\n    var x : LOD_TENSOR.shape(1).dtype(float32)\n"),
                    Catch::Contains("t.txt:2:1: end of file inside block 0"));
  CHECK_THROWS_WITH(readLegacyText("t.txt", "{ // block 0\n    {Out=['y'] = relu(inputs={X=['x']})\n}\n"),
                    Catch::StartsWith("t.txt:2:"));
}
