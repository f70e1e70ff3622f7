// The rules of PP-OCRv5's ops (ops/math_ops.cpp's gates, ops/upsample_ops.cpp): both spellings
// resolve to one definition, a well-formed op passes, a wrong rank, shape or attribute is reported
// at the JSON pointer of the slot or attribute in the op's own dialect.
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "runtime/kernels/kernels.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {

std::string ruleVar(const std::string& name, const std::string& shape, const std::string& dtype = "float32") {
  return R"({"name":")" + name + R"(","shape":)" + shape + R"(,"dtype":")" + dtype + R"("})";
}

// One rank, one block: `vars` and `ops` are JSON array bodies. The first problem's line, or "".
std::string firstUpsampleProblem(const std::string& vars, const std::string& ops) {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[{"rank":0,"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" +
                     vars + R"(],"ops":[)" + ops + "]}]}]}";
  auto job = loadJobFromText(text, "m.json");
  auto problems = verifyJob(*job);
  return problems.empty() ? "" : problems.front().line();
}

const std::string kOpAt = "m.json: /programs/0/blocks/0/ops/0";

}  // namespace

TEST_CASE("PP-OCRv5's ops: legacy and PIR spellings, one definition and one kernel each", "[ops]") {
  const std::vector<std::pair<const char*, const char*>> pairs{
      {"sigmoid", "pd_op.sigmoid"},          {"sigmoid_grad", "pd_op.sigmoid_grad"},
      {"hard_sigmoid", "pd_op.hardsigmoid"}, {"hard_sigmoid_grad", "pd_op.hardsigmoid_grad"},
      {"hard_swish", "pd_op.hardswish"},     {"hard_swish_grad", "pd_op.hardswish_grad"},
      {"nearest_interp_v2", "pd_op.nearest_interp"}, {"nearest_interp_v2_grad", "pd_op.nearest_interp_grad"},
      {"conv2d_transpose", "pd_op.conv2d_transpose"}, {"conv2d_transpose_grad", "pd_op.conv2d_transpose_grad"}};
  for (auto [legacy, pir] : pairs) {
    CAPTURE(legacy);
    REQUIRE(resolveOp(legacy));
    CHECK(resolveOp(legacy).def == resolveOp(pir).def);
    CHECK(rt::findKernel(legacy) != nullptr);
    CHECK(rt::findKernel(legacy) == rt::findKernel(pir));
  }
  CHECK(resolveOp("hard_swish").def->grad == "hardswish_grad");
  CHECK_FALSE(resolveOp("nearest_interp"));  // Paddle 1.x's op (PIR's legacy_nearest_interp) is another one
}

TEST_CASE("the gates' rules: Out like X, hardswish's scale not 0", "[ops][verify]") {
  std::string vars = ruleVar("x", "[2,3]") + "," + ruleVar("y", "[2,3]") + "," + ruleVar("z", "[3,2]");
  CHECK(firstUpsampleProblem(vars, R"({"type":"pd_op.hardsigmoid","inputs":{"in0":["x"]},"outputs":{"out0":["y"]},"attrs":{"slope":0.2,"offset":0.5}})").empty());
  CHECK(firstUpsampleProblem(vars, R"({"type":"sigmoid","inputs":{"X":["x"]},"outputs":{"Out":["z"]}})") ==
        kOpAt + "/outputs/Out/0: sigmoid: Out [3,2] should be [2,3] (X's shape)");
  CHECK(firstUpsampleProblem(vars, R"({"type":"hard_swish","inputs":{"X":["x"]},"outputs":{"Out":["y"]},"attrs":{"scale":0.0}})") ==
        kOpAt + "/attrs/scale: hard_swish: scale 0 would divide by zero");
  CHECK(firstUpsampleProblem(vars, R"({"type":"hard_sigmoid","inputs":{"X":["x"]},"outputs":{"Out":["y"]},"attrs":{"slope":"steep"}})")
            .find(kOpAt + "/attrs/slope: ") == 0);
}

TEST_CASE("nearest_interp's rule: the size from scale or out_h / out_w, the layout, the method", "[ops][verify]") {
  auto job = [](const std::string& x, const std::string& out, const std::string& attrs, const char* type = "pd_op.nearest_interp") {
    std::string slots = std::string(type) == "nearest_interp_v2" ? R"("inputs":{"X":["x"]},"outputs":{"Out":["o"]})"
                                                                 : R"("inputs":{"in0":["x"],"in1":[],"in2":[],"in3":[]},"outputs":{"out0":["o"]})";
    return firstUpsampleProblem(ruleVar("x", x) + "," + ruleVar("o", out), std::string(R"({"type":")") + type + R"(",)" + slots + R"(,"attrs":)" + attrs + "}");
  };
  const std::string ocr = R"({"data_format":"NCHW","out_h":-1,"out_w":-1,"scale":[2.0,2.0],"interp_method":"nearest","align_corners":false,"align_mode":1})";
  CHECK(job("[1,96,20,20]", "[1,96,40,40]", ocr).empty());
  CHECK(job("[1,96,20,20]", "[1,96,40,41]", ocr) ==
        kOpAt + "/outputs/out0/0: pd_op.nearest_interp: Out [1,96,40,41] should be [1,96,40,40] (X resized)");
  CHECK(job("[1,20,20,96]", "[1,30,10,96]", R"({"data_layout":"NHWC","out_h":30,"out_w":10})", "nearest_interp_v2").empty());
  CHECK(job("[96,20,20]", "[96,40,40]", ocr) == kOpAt + "/inputs/in0/0: pd_op.nearest_interp: X [96,20,20] should be 4-D (NCHW or NHWC)");
  CHECK(job("[1,96,20,20]", "[1,96,40,40]", R"({"scale":[2.0,2.0],"interp_method":"bilinear"})") ==
        kOpAt + "/attrs/interp_method: pd_op.nearest_interp: interp_method \"bilinear\" is not nearest");
  CHECK(job("[1,96,20,20]", "[1,96,40,40]", R"({"data_format":"NCDHW","scale":[2.0,2.0]})") ==
        kOpAt + "/attrs/data_format: pd_op.nearest_interp: data_layout \"NCDHW\" is neither NCHW nor NHWC");
  CHECK(job("[1,96,20,20]", "[1,96,40,40]", R"({"scale":[2.0,-2.0]})").find(kOpAt + "/attrs/scale: pd_op.nearest_interp: scale ") == 0);
  CHECK(job("[1,96,20,20]", "[1,96,40,40]", R"({"scale":"twice"})") .find(kOpAt + "/attrs/scale: ") == 0);
}

TEST_CASE("conv2d_transpose's rule: Paddle's output size, groups, output_size and output_padding", "[ops][verify]") {
  auto job = [](const std::string& out, const std::string& attrs, const std::string& filter = "[24,1,2,2]") {
    std::string vars = ruleVar("x", "[1,24,20,20]") + "," + ruleVar("w", filter) + "," + ruleVar("o", out) + "," + ruleVar("os", "[0]", "int64");
    return firstUpsampleProblem(vars, R"({"type":"pd_op.full_int_array","inputs":{},"outputs":{"out0":["os"]},"attrs":{"value":[],"dtype":"int64"}},
      {"type":"pd_op.conv2d_transpose","inputs":{"in0":["x"],"in1":["w"],"in2":["os"]},"outputs":{"out0":["o"]},"attrs":)" + attrs + "}");
  };
  const std::string at = "m.json: /programs/0/blocks/0/ops/1";
  const std::string ocr = R"({"strides":[2,2],"paddings":[0,0],"output_padding":[],"padding_algorithm":"EXPLICIT","groups":1,"dilations":[1,1],"data_format":"NCHW"})";
  CHECK(job("[1,1,40,40]", ocr).empty());
  CHECK(job("[1,1,40,41]", ocr) ==
        at + "/outputs/out0/0: pd_op.conv2d_transpose: Output [1,1,40,41] should be [1,1,40,40] (the transposed convolution of Input and Filter)");
  CHECK(job("[1,1,41,41]", R"({"strides":[2,2],"paddings":[0,0],"output_padding":[1,1]})").empty());
  CHECK(job("[1,1,42,41]", R"({"strides":[2,2],"paddings":[0,0],"output_padding":[2,1]})") ==
        at + "/attrs/output_padding: pd_op.conv2d_transpose: output_padding 2 should lie in [0, max(stride, dilation) = 2)");
  CHECK(job("[1,2,40,40]", R"({"strides":[2,2],"groups":2})") == "");  // Filter [24, 1] x 2 groups: 2 channels out
  CHECK(job("[1,1,40,40]", R"({"strides":[2,2],"groups":5})") ==
        at + "/attrs/groups: pd_op.conv2d_transpose: Input's 24 channels, Filter [24,1,2,2] and groups 5 do not agree");
  CHECK(job("[1,1,40,40]", ocr, "[24,1,2]") ==
        at + "/inputs/in1/0: pd_op.conv2d_transpose: Input [1,24,20,20] and Filter [24,1,2] should be 4-D (NCHW)");
}
