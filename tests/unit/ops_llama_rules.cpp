// The verifier's rules for the Llama and indexing ops (ops/llama_ops.cpp, ops/index_ops.cpp): a
// well-formed op passes, a wrong shape or dtype is reported at the JSON pointer of the slot or
// attribute, in the op's own dialect (PIR operands in<i>, constants passed as operands).
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {

std::string var(const std::string& name, const std::string& shape, const std::string& dtype = "float32") {
  return R"({"name":")" + name + R"(","shape":)" + shape + R"(,"dtype":")" + dtype + R"("})";
}

// One rank, one block: `vars` and `ops` are JSON array bodies. The first problem's line, or "".
std::string firstProblem(const std::string& vars, const std::string& ops) {
  std::string text = R"({"format":"sp-opt.program","version":1,"world_size":1,"programs":[{"rank":0,"blocks":[{"idx":0,"parent_idx":-1,"vars":[)" +
                     vars + R"(],"ops":[)" + ops + "]}]}]}";
  auto job = loadJobFromText(text, "m.json");
  auto problems = verifyJob(*job);
  return problems.empty() ? "" : problems.front().line();
}

const std::string kAt = "m.json: /programs/0/blocks/0/ops/0";

}  // namespace

TEST_CASE("rms_norm's rule checks norm_weight and inv_var against begin_norm_axis", "[ops][verify]") {
  auto job = [](const char* w, const char* type, const char* slots) {
    std::string vars = var("x", "[2,3,8]") + "," + var("w", w) + "," + var("y", "[2,3,8]") + "," + var("iv", "[2,3]");
    return firstProblem(vars, std::string(R"({"type":")") + type + R"(",)" + slots + R"(,"attrs":{"epsilon":1e-6,"begin_norm_axis":2}})");
  };
  const char* legacy = R"("inputs":{"x":["x"],"norm_weight":["w"]},"outputs":{"out":["y"],"inv_var":["iv"]})";
  const char* pir = R"("inputs":{"in0":["x"],"in1":[],"in2":[],"in3":["w"]},"outputs":{"out0":["y"],"out1":[],"out2":["iv"]})";
  CHECK(job("[8]", "rms_norm", legacy).empty());
  CHECK(job("[7]", "rms_norm", legacy) ==
        kAt + "/inputs/norm_weight/0: rms_norm: norm_weight [7] should hold 8 values (the normalised dims of x)");
  CHECK(job("[7]", "pd_op.rms_norm", pir) ==
        kAt + "/inputs/in3/0: pd_op.rms_norm: norm_weight [7] should hold 8 values (the normalised dims of x)");
}

TEST_CASE("fused_rotary_position_embedding's rule checks q/k and the sin/cos tables", "[ops][verify]") {
  auto job = [](const char* sin_shape, bool ids) {
    std::string vars = var("q", "[2,3,2,4]") + "," + var("k", "[2,3,1,4]") + "," + var("s", sin_shape) + "," + var("c", sin_shape) + "," +
                       var("p", "[2,3]", "int64") + "," + var("oq", "[2,3,2,4]") + "," + var("ok", "[2,3,1,4]");
    std::string ins = R"({"q":["q"],"k":["k"],"sin":["s"],"cos":["c"])" + std::string(ids ? R"(,"position_ids":["p"])" : "") + "}";
    return firstProblem(vars, R"({"type":"fused_rotary_position_embedding","inputs":)" + ins +
                                  R"(,"outputs":{"out_q":["oq"],"out_k":["ok"]},"attrs":{"use_neox_rotary_style":false}})");
  };
  CHECK(job("[1,3,1,4]", false).empty());
  CHECK(job("[8,4]", true).empty());  // position_ids may pick any of the rows
  CHECK(job("[8,4]", false) == kAt + "/inputs/sin/0: fused_rotary_position_embedding: sin [8,4] should be [seq, head_dim] or "
                                     "[1, seq, 1, head_dim] with head_dim 4 and seq 3");
}

TEST_CASE("swiglu's and silu's rules check the result's shape", "[ops][verify]") {
  std::string vars = var("x", "[2,8]") + "," + var("y", "[2,8]") + "," + var("o", "[2,8]") + "," + var("h", "[2,4]");
  CHECK(firstProblem(vars, R"({"type":"swiglu","inputs":{"x":["x"],"y":["y"]},"outputs":{"out":["o"]}})").empty());
  CHECK(firstProblem(vars, R"({"type":"pd_op.swiglu","inputs":{"in0":["x"]},"outputs":{"out0":["h"]}})").empty());  // halves of x
  CHECK(firstProblem(vars, R"({"type":"swiglu","inputs":{"x":["x"]},"outputs":{"out":["o"]}})") ==
        kAt + "/outputs/out/0: swiglu: out [2,8] should be [2,4] (silu(x) * y)");
  CHECK(firstProblem(vars, R"({"type":"silu","inputs":{"X":["x"]},"outputs":{"Out":["h"]}})") ==
        kAt + "/outputs/Out/0: silu: Out [2,4] should be [2,8] (X's shape)");
}

TEST_CASE("the mask ops' rules: tril_triu's rank, where's Condition, full_like's shape", "[ops][verify]") {
  std::string vars = var("v", "[4]") + "," + var("m", "[4,4]") + "," + var("c", "[4,4]", "bool") + "," + var("f", "[4,4]") + "," +
                     var("o", "[4,4]");
  CHECK(firstProblem(vars, R"({"type":"pd_op.tril","inputs":{"in0":["m"]},"outputs":{"out0":["o"]},"attrs":{"diagonal":0}})").empty());
  CHECK(firstProblem(vars, R"({"type":"tril_triu","inputs":{"X":["v"]},"outputs":{"Out":["v"]},"attrs":{"lower":true}})") ==
        kAt + "/inputs/X/0: tril_triu: X [4] should have at least 2 dims");
  CHECK(firstProblem(vars, R"({"type":"where","inputs":{"Condition":["c"],"X":["m"],"Y":["f"]},"outputs":{"Out":["o"]}})").empty());
  CHECK(firstProblem(vars, R"({"type":"pd_op.where","inputs":{"in0":["f"],"in1":["m"],"in2":["f"]},"outputs":{"out0":["o"]}})") ==
        kAt + "/inputs/in0/0: pd_op.where: Condition is float32, not bool");
  CHECK(firstProblem(vars, R"({"type":"fill_any_like","inputs":{"X":["v"]},"outputs":{"Out":["o"]},"attrs":{"value":0.0}})") ==
        kAt + "/outputs/Out/0: fill_any_like: Out [4,4] should be [4] (X's shape)");
}

TEST_CASE("slice's rule resolves starts and ends, from attributes or PIR's full_int_array operands", "[ops][verify]") {
  std::string vars = var("x", "[4,6]") + "," + var("o", "[4,2]") + "," + var("st", "[1]", "int64") + "," + var("en", "[1]", "int64");
  auto legacy = [&](const char* ends) {
    return firstProblem(vars, std::string(R"({"type":"slice","inputs":{"Input":["x"]},"outputs":{"Out":["o"]},"attrs":{"axes":[1],"starts":[-3],"ends":)") +
                                  ends + "}}");
  };
  CHECK(legacy("[5]").empty());
  CHECK(legacy("[6]") == kAt + "/outputs/Out/0: slice: Out [4,2] should be [4,3] (Input sliced by starts, ends and axes)");
  CHECK(firstProblem(vars, R"({"type":"slice","inputs":{"Input":["x"]},"outputs":{"Out":["o"]},"attrs":{"axes":[1],"starts":[0],"ends":[2],"decrease_axis":[1]}})") ==
        kAt + "/attrs/decrease_axis: slice: decrease_axis 1 is not a dim sliced to 1 of [4,2]");
  auto pir = [&](const char* ends) {
    return firstProblem(vars, R"({"type":"pd_op.full_int_array","inputs":{},"outputs":{"out0":["st"]},"attrs":{"value":[1]}},)"
                              R"({"type":"pd_op.full_int_array","inputs":{},"outputs":{"out0":["en"]},"attrs":{"value":)" +
                                  std::string(ends) + R"(}},{"type":"pd_op.slice","inputs":{"in0":["x"],"in1":["st"],"in2":["en"]},"outputs":{"out0":["o"]},"attrs":{"axes":[1]}})");
  };
  CHECK(pir("[3]").empty());
  CHECK(pir("[4]") == "m.json: /programs/0/blocks/0/ops/2/outputs/out0/0: pd_op.slice: Out [4,2] should be [4,3] (Input sliced by starts, ends and axes)");
}

TEST_CASE("expand's, squeeze2's, stack's and gather_nd's rules", "[ops][verify]") {
  std::string vars = var("x", "[3,1]") + "," + var("e", "[2,3,4]") + "," + var("sq", "[3]") + "," + var("xs", "[0,3,1]") + "," +
                     var("st", "[2,3,1]") + "," + var("i", "[5,1]", "int64") + "," + var("fi", "[5,1]") + "," + var("g", "[5,1]");
  CHECK(firstProblem(vars, R"({"type":"expand_v2","inputs":{"X":["x"]},"outputs":{"Out":["e"]},"attrs":{"shape":[2,-1,4]}})").empty());
  CHECK(firstProblem(vars, R"({"type":"expand_v2","inputs":{"X":["x"]},"outputs":{"Out":["e"]},"attrs":{"shape":[2,2,4]}})") ==
        kAt + "/attrs/shape: expand_v2: X [3,1] does not expand to shape [2,2,4] (dim 1)");
  CHECK(firstProblem(vars, R"({"type":"squeeze2","inputs":{"X":["x"]},"outputs":{"Out":["sq"],"XShape":["xs"]},"attrs":{"axes":[-1]}})").empty());
  CHECK(firstProblem(vars, R"({"type":"squeeze2","inputs":{"X":["x"]},"outputs":{"Out":["sq"],"XShape":["xs"]},"attrs":{"axes":[0]}})") ==
        kAt + "/outputs/Out/0: squeeze2: Out [3] should be [3,1] (X without the size-1 dims of axes)");
  // squeeze_grad: the legacy op reads XShape; PIR's operand 0 is x (Paddle 3) or, earlier, the xshape.
  CHECK(firstProblem(vars, R"({"type":"squeeze2_grad","inputs":{"XShape":["xs"],"Out@GRAD":["sq"]},"outputs":{"X@GRAD":["x"]},"attrs":{"axes":[-1]}})")
            .empty());
  CHECK(firstProblem(vars, R"({"type":"squeeze2_grad","inputs":{"XShape":["xs"],"Out@GRAD":["sq"]},"outputs":{"X@GRAD":["sq"]},"attrs":{"axes":[-1]}})") ==
        kAt + "/outputs/X@GRAD/0: squeeze2_grad: X@GRAD [3] should be [3,1] (XShape's dims[1:])");
  for (const char* in0 : {"x", "xs"})
    CHECK(firstProblem(vars, std::string(R"({"type":"pd_op.squeeze_grad","inputs":{"in0":[")") + in0 +
                                 R"("],"in1":["sq"]},"outputs":{"out0":["x"]},"attrs":{"axis":[-1]}})")
              .empty());
  CHECK(firstProblem(vars, R"({"type":"pd_op.squeeze_grad","inputs":{"in0":["x"],"in1":["sq"]},"outputs":{"out0":["sq"]},"attrs":{"axis":[-1]}})") ==
        kAt + "/outputs/out0/0: pd_op.squeeze_grad: X@GRAD [3] should be [3,1] (X's dims)");
  CHECK(firstProblem(vars, R"({"type":"stack","inputs":{"X":["x","x"]},"outputs":{"Y":["st"]},"attrs":{"axis":0}})").empty());
  CHECK(firstProblem(vars, R"({"type":"stack","inputs":{"X":["x","x"]},"outputs":{"Y":["st"]},"attrs":{"axis":1}})") ==
        kAt + "/outputs/Y/0: stack: Y [2,3,1] should be [3,2,1] (the parts stacked along axis)");
  CHECK(firstProblem(vars, R"({"type":"gather_nd","inputs":{"X":["x"],"Index":["i"]},"outputs":{"Out":["g"]}})").empty());
  CHECK(firstProblem(vars, R"({"type":"gather_nd","inputs":{"X":["x"],"Index":["fi"]},"outputs":{"Out":["g"]}})") ==
        kAt + "/inputs/Index/0: gather_nd: Index is float32, not int32 or int64");
}
