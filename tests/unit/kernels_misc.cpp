// fill_constant, assign, sgd, depend, nop, the registry and the BLAS opened on first use.
#include <algorithm>

#include "kernel_harness.h"
#include "runtime/kernels/blas.h"

using namespace kt;

TEST_CASE("fill_constant takes dtype as Paddle's enum or a name", "[kernels]") {
  struct Case {
    DType t;
    std::string dtype_attr;
    std::string value;
    double want;
  };
  for (const Case& c : std::vector<Case>{{DType::Float32, "5", "1.5", 1.5},
                                         {DType::Float64, "6", "-2.25", -2.25},
                                         {DType::Int64, "3", "42", 42},
                                         {DType::Int64, "\"int64\"", "7", 7},
                                         {DType::Float32, "\"float32\"", "0.5", 0.5},
                                         {DType::Float16, "4", "3", 3},
                                         {DType::Bool, "0", "1", 1},
                                         {DType::Float64, "\"paddle.float64\"", "9", 9}}) {
    CAPTURE(spopt::dtypeName(c.t), c.dtype_attr);
    OpRunner r("fill_constant");
    r.out("Out", {Tensor(c.t, {2, 3})}).attr("shape", "[2,3]").attr("dtype", c.dtype_attr).attr("value", c.value).run();
    requireClose(r.result("Out"), std::vector<double>(6, c.want), 0);
  }
  OpRunner big("fill_constant");  // str_value keeps a big int64 exact
  big.out("Out", {Tensor(DType::Int64, {1})}).attr("shape", "[1]").attr("dtype", "3").attr("value", "0");
  big.attr("str_value", "\"9007199254740993\"").run();
  REQUIRE(big.result("Out").data<int64_t>()[0] == 9007199254740993LL);
  OpRunner mismatch("fill_constant");
  mismatch.out("Out", {Tensor(DType::Int64, {2})}).attr("shape", "[2]").attr("dtype", "5").attr("value", "1");
  REQUIRE_THROWS_WITH(mismatch.run(), Catch::Contains("disagrees with Out's int64"));
  OpRunner shape("fill_constant");
  shape.out("Out", {Tensor(DType::Float32, {2})}).attr("shape", "[3]").attr("dtype", "5").attr("value", "1");
  REQUIRE_THROWS_AS(shape.run(), spopt::rt::KernelError);
  OpRunner unknown("fill_constant");
  unknown.out("Out", {Tensor(DType::Float32, {2})}).attr("shape", "[2]").attr("dtype", "99").attr("value", "1");
  REQUIRE_THROWS_WITH(unknown.run(), Catch::Contains("dtype 99"));
}

TEST_CASE("assign, depend and nop copy X", "[kernels]") {
  for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::UInt8}) {
    CAPTURE(spopt::dtypeName(t));
    Tensor x = fromDoubles(t, {3, 2}, {1, 2, 3, 4, 5, 6});
    OpRunner a("assign");
    a.in("X", {x}).out("Out", {Tensor(t, {3, 2})}).run();
    requireClose(a.result("Out"), toDoubles(x), 0);
    OpRunner d("depend");
    d.in("X", {x}).in("Dep", {Tensor(DType::Float32, {1})}).out("Out", {Tensor(t, {3, 2})}).run();
    requireClose(d.result("Out"), toDoubles(x), 0);
    OpRunner alias("depend");  // Out aliasing X: nothing moves
    alias.in("X", {x}).out("Out", {x}).run();
    requireClose(x, {1, 2, 3, 4, 5, 6}, 0);
    OpRunner n("nop");
    n.in("X", {x}).out("Out", {Tensor(t, {3, 2})}).run();
    requireClose(n.result("Out"), toDoubles(x), 0);
  }
  OpRunner bare("nop");  // no outputs at all
  bare.in("X", {Tensor(DType::Float32, {2})}).run();
  OpRunner bad("assign");
  bad.in("X", {Tensor(DType::Float32, {2})}).out("Out", {Tensor(DType::Float64, {2})});
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("Out is float64 but X is float32"));
}

TEST_CASE("sgd updates the parameter, also in place", "[kernels]") {
  // [300,700]: more than one of the kernel's slices of 64K elements, the last one short.
  for (DType t : floatTypes())
  for (const Dims& s : {Dims{5, 4}, Dims{300, 700}}) {
    Tensor p = randomTensor(t, s), g = randomTensor(t, s);
    Tensor lr = fromDoubles(DType::Float32, {1}, {0.125});
    std::vector<double> want = toDoubles(p), gv = toDoubles(g);
    for (size_t i = 0; i < want.size(); ++i) want[i] -= 0.125 * gv[i];
    OpRunner r("sgd");
    r.in("Param", {p}).in("LearningRate", {lr}).in("Grad", {g}).out("ParamOut", {Tensor(t, s)}).run();
    requireClose(r.result("ParamOut"), want, tolFor(t));
    OpRunner inplace("sgd");
    inplace.in("Param", {p}).in("LearningRate", {lr}).in("Grad", {g}).out("ParamOut", {p}).run();
    requireClose(p, want, tolFor(t));
  }
}

TEST_CASE("the registry covers every compute and scheduling op of ops.md", "[kernels]") {
  const std::vector<std::string_view> ops{
      "matmul_v2", "matmul_v2_grad", "elementwise_add", "elementwise_add_grad", "elementwise_mul",
      "elementwise_mul_grad", "gelu", "gelu_grad", "relu", "relu_grad", "layer_norm", "layer_norm_grad",
      "softmax", "softmax_grad", "dropout", "dropout_grad", "scale", "reshape2", "reshape2_grad", "transpose2",
      "transpose2_grad", "split", "concat", "reduce_sum", "reduce_sum_grad", "reduce_mean", "reduce_mean_grad",
      "mean", "mean_grad", "fill_constant", "assign", "sum", "sgd", "depend", "nop", "conv2d", "conv2d_grad", "depthwise_conv2d", "depthwise_conv2d_grad", "pool2d",
      "pool2d_grad", "batch_norm", "batch_norm_grad", "mul", "mul_grad", "top_k_v2", "accuracy", "momentum",
      // a training step's (kernels_train_language.cpp): Paddle 1.x's matmul, the loss, the optimizer, readers
      "matmul", "matmul_grad", "elementwise_div", "elementwise_div_grad", "unsqueeze2", "c_sync_calc_stream",
      "c_sync_comm_stream", "coalesce_tensor", "create_py_reader", "create_double_buffer_reader", "lookup_table_v2",
      "lookup_table_v2_grad", "softmax_with_cross_entropy", "softmax_with_cross_entropy_grad", "adam",
      "adamw", "c_embedding", "c_embedding_grad", "c_softmax_with_cross_entropy", "c_softmax_with_cross_entropy_grad",
      // mixed precision and gradient clipping (kernels_amp.cpp)
      "cast", "check_finite_and_unscale", "update_loss_scaling", "squared_l2_norm", "squared_l2_norm_grad", "sqrt",
      "sqrt_grad", "clip_by_norm", "elementwise_max", "elementwise_max_grad", "elementwise_min", "elementwise_min_grad",
      // the Llama layer and its masks and shape ops (kernels_llama.cpp, kernels_index.cpp)
      "rms_norm", "rms_norm_grad", "silu", "silu_grad", "swiglu", "swiglu_grad", "fused_rotary_position_embedding",
      "fused_rotary_position_embedding_grad", "tril_triu", "where", "where_grad", "fill_any_like", "squeeze2", "squeeze2_grad",
      "slice", "slice_grad", "stack", "stack_grad", "expand_v2", "expand_v2_grad", "gather_nd", "gather_nd_grad",
      // PP-OCRv5's detection program (kernels_activation_gates.cpp, kernels_upsample.cpp)
      "sigmoid", "sigmoid_grad", "hard_sigmoid", "hard_sigmoid_grad", "hard_swish", "hard_swish_grad", "nearest_interp_v2",
      "nearest_interp_v2_grad", "conv2d_transpose", "conv2d_transpose_grad",
      // and, from the catalogue, ops only PIR spells, and fetch
      "fetch", "pd_op.split_with_num", "builtin.slice", "pd_op.full_int_array", "builtin.combine", "builtin.split", "pd_op.tril",
      "pd_op.triu"};
  auto supported = spopt::rt::supportedKernelOps();
  for (auto op : ops) {
    CAPTURE(op);
    REQUIRE(spopt::rt::findKernel(op) != nullptr);
    REQUIRE(std::find(supported.begin(), supported.end(), op) != supported.end());
  }
  REQUIRE(supported.size() == ops.size());
  REQUIRE(spopt::rt::findKernel("c_allreduce_sum") == nullptr);  // the executor's communicator runs it
  REQUIRE(spopt::rt::findKernel("frobnicate") == nullptr);
}

TEST_CASE("missing inputs and bad attributes are KernelErrors naming the op", "[kernels]") {
  OpRunner r("gelu");
  r.out("Out", {Tensor(DType::Float32, {2})});
  REQUIRE_THROWS_WITH(r.run(), "gelu: missing input X");
  OpRunner a("softmax");
  a.in("X", {Tensor(DType::Float32, {2})}).out("Out", {Tensor(DType::Float32, {2})}).attr("axis", "\"last\"");
  REQUIRE_THROWS_WITH(a.run(), Catch::Contains("softmax: attribute axis is not an integer"));
  OpRunner i("relu");
  i.in("X", {Tensor(DType::Int64, {2})}).out("Out", {Tensor(DType::Int64, {2})});
  REQUIRE_THROWS_WITH(i.run(), "relu: X is int64, not a floating type");
}

TEST_CASE("the BLAS opens on first use and names its OpenBLAS kernel set", "[kernels]") {
  const spopt::rt::Blas& b = spopt::rt::blas();
  REQUIRE(b.sgemm);
  REQUIRE(b.dgemm);
  CHECK(b.core != "unknown");
  CHECK(b.threads >= 1);
}

TEST_CASE("fill_constant takes its value from ValueTensor, and reshape2 its shape from Shape", "[kernels]") {
  OpRunner f("fill_constant");
  f.in("ValueTensor", {fromDoubles(DType::Float64, {1}, {2.5})}).out("Out", {Tensor(DType::Float64, {3})});
  f.attr("shape", "[3]").attr("dtype", "6").attr("value", "0.0").run();
  requireClose(f.result("Out"), {2.5, 2.5, 2.5}, 0);
  Tensor x = fromDoubles(DType::Float32, {2, 6}, sequence(12));
  OpRunner r("reshape2");
  r.in("X", {x}).in("Shape", {fromDoubles(DType::Int64, {2}, {4, -1})}).out("Out", {Tensor(DType::Float32, {4, 3})});
  r.attr("shape", "[12]").run();
  requireClose(r.result("Out"), sequence(12), 0);
}
