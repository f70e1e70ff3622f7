// Matmul, elementwise arithmetic, activations and scale: definitions and their rules.
#include <algorithm>

#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

double numel(const Var* v) {
  if (!v) return 0;
  int64_t n = v->numel();
  return n < 0 ? 0 : double(n);
}

Result checkElementwise(const OpView& op, bool grad) {
  const Var *x = op.in("X"), *y = op.in("Y");
  if (auto e = requireSameStorage(op, "/inputs", "Y", y, "X", x)) return e;
  if (grad) {
    if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), "X", x)) return e;
  } else if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) {
    return e;
  }
  if (auto e = requireFloat(op, "X", x)) return e;
  if (!known(x) || !known(y)) return std::nullopt;
  auto axis = intAttr(op, "axis", -1);
  if (!axis) return std::nullopt;
  std::string why;
  auto b = alignBroadcast(x->shape, y->shape, *axis, &why);
  if (!b)
    return fail(op, why == "axis out of range" ? "/attrs/axis" : "",
                "X " + dimsText(x->shape) + " and Y " + dimsText(y->shape) + " do not broadcast with axis=" + std::to_string(*axis) + ": " + why);
  if (grad) {
    if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), b->out, "X and Y broadcast")) return e;
    if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "the shape of X")) return e;
    return requireDims(op, "/outputs", "Y@GRAD", op.out("Y@GRAD"), y->shape, "the shape of Y");
  }
  return requireDims(op, "/outputs", "Out", op.out("Out"), b->out, "X and Y broadcast");
}
Result ruleElementwise(const OpView& op) { return checkElementwise(op, false); }
Result ruleElementwiseGrad(const OpView& op) { return checkElementwise(op, true); }

// matmul: inner dims agree, batch dims broadcast as replay's kernel does (matmul_plan.h). The
// transpose flags are attributes `tx_attr` and `ty_attr` (matmul_v2's trans_x, Paddle 1.x's transpose_X).
Result checkMatmul(const OpView& op, std::string_view tx_attr, std::string_view ty_attr) {
  const Var *x = op.in("X"), *w = op.in("Y"), *y = op.out("Out");
  std::string t(op.type);
  if (!x || !w || !y) return OpRuleError{"", t + " needs inputs X, Y and output Out"};
  if (!known(x) || !known(w) || !known(y)) return std::nullopt;
  if (x->shape.size() < 2 || w->shape.size() < 2)
    return OpRuleError{"", t + " operands must be at least 2-D: " + typeText(*x) + " x " + typeText(*w)};
  bool tx = op.attrs.getBool(tx_attr).value_or(false), ty = op.attrs.getBool(ty_attr).value_or(false);
  size_t rx = x->shape.size(), rw = w->shape.size();
  int64_t m = tx ? x->shape[rx - 1] : x->shape[rx - 2], kx = tx ? x->shape[rx - 2] : x->shape[rx - 1];
  int64_t kw = ty ? w->shape[rw - 1] : w->shape[rw - 2], n = ty ? w->shape[rw - 2] : w->shape[rw - 1];
  if (kx != kw) return OpRuleError{"", t + " inner dims differ: " + typeText(*x) + " x " + typeText(*w)};
  auto batch = broadcastBatchDims(ShapeDims(x->shape.begin(), x->shape.end() - 2), ShapeDims(w->shape.begin(), w->shape.end() - 2));
  if (!batch) return OpRuleError{"", t + " batch dims do not broadcast: " + typeText(*x) + " x " + typeText(*w)};
  ShapeDims expect = *batch;
  expect.push_back(m);
  expect.push_back(n);
  if (y->shape != expect)
    return OpRuleError{"", t + " output " + typeText(*y) + " should have shape of " + typeText(*x) + " x " + typeText(*w)};
  return std::nullopt;
}

Result ruleMatmul(const OpView& op) { return checkMatmul(op, "trans_x", "trans_y"); }
Result ruleMatmulV1(const OpView& op) { return checkMatmul(op, "transpose_X", "transpose_Y"); }

// matmul_grad: operands stored alike; each input's gradient has its input's shape and storage.
Result ruleMatmulGrad(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/inputs", "Y", op.in("Y"), "X", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), "X", x)) return e;
  for (const char* in : {"X", "Y"}) {
    const Var* v = op.in(in);
    std::string grad = std::string(in) + "@GRAD";
    if (auto e = requireSameStorage(op, "/outputs", grad, op.out(grad), in, v)) return e;
    if (known(v))
      if (auto e = requireDims(op, "/outputs", grad, op.out(grad), v->shape, std::string(in) + "'s shape")) return e;
  }
  return std::nullopt;
}

// softmax(_grad)'s axis lies within the rank of its operand (a 0-D operand has none to check).
Result checkSoftmaxAxis(const OpView& op, const ShapeDims& shape) {
  auto axis = intAttr(op, "axis", -1);
  int64_t r = int64_t(shape.size());
  if (r == 0 || !axis || (*axis >= -r && *axis < r)) return std::nullopt;
  return fail(op, "/attrs/axis", "axis " + std::to_string(*axis) + " is out of range for rank " + std::to_string(r));
}

// gelu, relu, sigmoid, hardsigmoid, hardswish, softmax: Out has X's shape.
Result ruleUnary(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  return requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape");
}
Result ruleSoftmax(const OpView& op) {
  if (auto e = ruleUnary(op)) return e;
  const Var* x = op.in("X");
  return known(x) ? checkSoftmaxAxis(op, x->shape) : std::nullopt;
}

// gelu_grad, hardswish_grad (against X), relu_grad, sigmoid_grad, hardsigmoid_grad and
// softmax_grad (against Out): Out@GRAD and X@GRAD are stored and shaped like the reference.
Result checkPointwiseGrad(const OpView& op, const char* ref_slot) {
  const Var* ref = op.in(ref_slot);
  if (auto e = requireFloat(op, ref_slot, ref)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), ref_slot, ref)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", op.out("X@GRAD"), ref_slot, ref)) return e;
  if (!known(ref)) return std::nullopt;
  const std::string why = std::string(ref_slot) + "'s shape";
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), ref->shape, why)) return e;
  return requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), ref->shape, why);
}
Result ruleGradOfX(const OpView& op) { return checkPointwiseGrad(op, "X"); }
Result ruleGradOfOut(const OpView& op) { return checkPointwiseGrad(op, "Out"); }
// hardswish(_grad) divides by `scale`.
Result checkHardswishScale(const OpView& op) {
  auto scale = op.attrs.getNumber("scale");
  if (op.attrs.has("scale") && scale && *scale == 0) return fail(op, "/attrs/scale", "scale 0 would divide by zero");
  return std::nullopt;
}
Result ruleHardswish(const OpView& op) {
  if (auto e = ruleUnary(op)) return e;
  return checkHardswishScale(op);
}
Result ruleHardswishGrad(const OpView& op) {
  if (auto e = checkPointwiseGrad(op, "X")) return e;
  return checkHardswishScale(op);
}
Result ruleSoftmaxGrad(const OpView& op) {
  if (auto e = checkPointwiseGrad(op, "Out")) return e;
  const Var* ref = op.in("Out");
  return known(ref) ? checkSoftmaxAxis(op, ref->shape) : std::nullopt;
}

// scale: Out like X; a ScaleTensor holds one element.
Result ruleScale(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (known(x))
    if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape")) return e;
  const Var* st = op.in("ScaleTensor");
  if (known(st) && st->numel() != 1)
    return fail(op, "/inputs/ScaleTensor/0", "ScaleTensor " + dimsText(st->shape) + " should hold one element");
  return std::nullopt;
}

double matmulFlops(const OpView& op, const Var* x, const Var* out) {
  if (!x || !out || x->shape.empty()) return 0;
  bool trans_x = op.attrs.getBool(op.def() && op.def()->attr("transpose_X") ? "transpose_X" : "trans_x").value_or(false);
  size_t r = x->shape.size();
  int64_t k = r == 1 ? x->shape[0] : x->shape[trans_x ? r - 2 : r - 1];
  return 2.0 * numel(out) * double(std::max<int64_t>(k, 0));
}
double flopsMatmul(const OpView& op) { return matmulFlops(op, op.in("X"), op.out("Out")); }
// dX = dOut . Y^T and dY = X^T . dOut: each is a GEMM the size of the forward one.
double flopsMatmulGrad(const OpView& op) {
  double fwd = matmulFlops(op, op.in("X"), op.in("Out@GRAD"));
  return fwd * double((op.out("X@GRAD") ? 1 : 0) + (op.out("Y@GRAD") ? 1 : 0));
}
// Per gradient produced: a copy-through for add/sub (1 FLOP, counting the broadcast sums), a
// product for mul/div (2).
template <int kPerElement> double flopsElementwiseGrad(const OpView& op) {
  double n = numel(op.in("Out@GRAD"));
  return n * kPerElement * double((op.out("X@GRAD") ? 1 : 0) + (op.out("Y@GRAD") ? 1 : 0));
}

constexpr uint32_t kPure = trait::Recomputable;
constexpr uint32_t kPointwise = trait::Elementwise | trait::Recomputable;

std::vector<OperandDef> binaryIn() { return {{"X", {}, 0, true}, {"Y", {}, 1, true}}; }
std::vector<OperandDef> binaryGradIn(bool reads_xy) {
  return {{"X", {}, 0, true, reads_xy}, {"Y", {}, 1, true, reads_xy}, {"Out@GRAD", {}, 2, true}};
}
std::vector<OperandDef> binaryGradOut() { return {{"X@GRAD", {}, 0}, {"Y@GRAD", {}, 1}}; }
std::vector<OperandDef> out0() { return {{"Out", {}, 0, true}}; }
std::vector<OperandDef> xIn() { return {{"X", {}, 0, true}}; }
std::vector<OperandDef> dxOut() { return {{"X@GRAD", {}, 0, true}}; }

// One elementwise binary family: forward and grad. add/sub gradients read only X's and Y's shapes.
void addBinary(std::vector<OpDef>& d, std::string_view name, std::string_view legacy, std::string_view pir,
               std::string_view grad, std::string_view legacy_grad, std::string_view pir_grad, bool grad_reads_xy,
               FlopsFn grad_flops) {
  d.push_back({.name = name, .spellings = {legacyName(legacy), pirName(pir)}, .inputs = binaryIn(), .outputs = out0(),
               .attrs = {{"axis", AttrKind::Int}}, .traits = kPointwise, .rule = ruleElementwise,
               .cost = {1, "Out"}, .grad = grad});
  d.push_back({.name = grad, .spellings = {legacyName(legacy_grad), pirName(pir_grad)}, .inputs = binaryGradIn(grad_reads_xy),
               .outputs = binaryGradOut(), .attrs = {{"axis", AttrKind::Int}}, .traits = trait::Grad,
               .rule = ruleElementwiseGrad, .cost = {.flops = grad_flops}});
}

}  // namespace

void addMathOps(std::vector<OpDef>& d) {
  std::vector<AttrDef> trans = {{"trans_x", AttrKind::Bool, "transpose_x"}, {"trans_y", AttrKind::Bool, "transpose_y"}};
  // matmul's slots are checked by its rule, with its own wording.
  d.push_back({.name = "matmul", .spellings = {legacyName("matmul_v2"), pirName("pd_op.matmul")},
               .inputs = {{"X", {}, 0}, {"Y", {}, 1}}, .outputs = {{"Out", {}, 0}}, .attrs = trans, .traits = kPure | trait::Blas, .rule = ruleMatmul,
               .cost = {.flops = flopsMatmul}, .grad = "matmul_grad"});
  d.push_back({.name = "matmul_grad", .spellings = {legacyName("matmul_v2_grad"), pirName("pd_op.matmul_grad")},
               .inputs = binaryGradIn(true), .outputs = binaryGradOut(), .attrs = trans, .traits = trait::Grad | trait::Blas,
               .rule = ruleMatmulGrad, .cost = {.flops = flopsMatmulGrad}});
  // Paddle 1.x's matmul: Out = alpha * op(X) op(Y), batched like matmul_v2.
  std::vector<AttrDef> v1_attrs = {{"transpose_X", AttrKind::Bool}, {"transpose_Y", AttrKind::Bool}, {"alpha", AttrKind::Float}};
  d.push_back({.name = "matmul_v1", .spellings = {legacyName("matmul")}, .inputs = {{"X", {}, -1, true}, {"Y", {}, -1, true}},
               .outputs = {{"Out", {}, -1, true}}, .attrs = v1_attrs, .traits = kPure | trait::Blas, .rule = ruleMatmulV1,
               .cost = {.flops = flopsMatmul}, .grad = "matmul_v1_grad"});
  d.push_back({.name = "matmul_v1_grad", .spellings = {legacyName("matmul_grad")}, .inputs = binaryGradIn(true),
               .outputs = binaryGradOut(), .attrs = v1_attrs, .traits = trait::Grad | trait::Blas, .rule = ruleMatmulGrad,
               .cost = {.flops = flopsMatmulGrad}});
  addBinary(d, "add", "elementwise_add", "pd_op.add", "add_grad", "elementwise_add_grad", "pd_op.add_grad", false, flopsElementwiseGrad<1>);
  addBinary(d, "subtract", "elementwise_sub", "pd_op.subtract", "subtract_grad", "elementwise_sub_grad", "pd_op.subtract_grad", false,
            flopsElementwiseGrad<1>);
  addBinary(d, "multiply", "elementwise_mul", "pd_op.multiply", "multiply_grad", "elementwise_mul_grad", "pd_op.multiply_grad", true,
            flopsElementwiseGrad<2>);
  addBinary(d, "divide", "elementwise_div", "pd_op.divide", "divide_grad", "elementwise_div_grad", "pd_op.divide_grad", true,
            flopsElementwiseGrad<2>);
  // divide_grad reads Out and only X's shape: dX = dOut / Y, dY = -dOut * Out / Y.
  d.back().inputs = {{"X", {}, 0, true, false}, {"Y", {}, 1, true}, {"Out", {}, 2, true}, {"Out@GRAD", {}, 3, true}};
  // Their gradients read X and Y to see which operand won each element (gradient clipping's max).
  addBinary(d, "maximum", "elementwise_max", "pd_op.maximum", "maximum_grad", "elementwise_max_grad", "pd_op.maximum_grad", true,
            flopsElementwiseGrad<1>);
  addBinary(d, "minimum", "elementwise_min", "pd_op.minimum", "minimum_grad", "elementwise_min_grad", "pd_op.minimum_grad", true,
            flopsElementwiseGrad<1>);

  d.push_back({.name = "gelu", .spellings = {legacyName("gelu"), pirName("pd_op.gelu")}, .inputs = xIn(), .outputs = out0(),
               .attrs = {{"approximate", AttrKind::Bool}}, .traits = kPointwise, .rule = ruleUnary, .cost = {8, "Out"},
               .grad = "gelu_grad"});
  d.push_back({.name = "gelu_grad", .spellings = {legacyName("gelu_grad"), pirName("pd_op.gelu_grad")},
               .inputs = {{"X", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = dxOut(),
               .attrs = {{"approximate", AttrKind::Bool}}, .traits = trait::Grad, .rule = ruleGradOfX, .cost = {12, "X@GRAD"}});
  d.push_back({.name = "relu", .spellings = {legacyName("relu"), pirName("pd_op.relu")}, .inputs = xIn(), .outputs = out0(),
               .traits = kPointwise, .rule = ruleUnary, .cost = {1, "Out"}, .grad = "relu_grad"});
  d.push_back({.name = "relu_grad", .spellings = {legacyName("relu_grad"), pirName("pd_op.relu_grad")},
               .inputs = {{"Out", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = dxOut(), .traits = trait::Grad,
               .rule = ruleGradOfOut, .cost = {1, "X@GRAD"}});
  // The logistic family (PP-OCR's heads and squeeze-excite gates). hardswish's attributes are
  // legacy hard_swish's; PIR's op has none and uses Paddle's fixed 6 / 6 / 3.
  d.push_back({.name = "sigmoid", .spellings = {legacyName("sigmoid"), pirName("pd_op.sigmoid"), pirName("pd_op.sigmoid_", true)},
               .inputs = xIn(), .outputs = out0(), .traits = kPointwise, .rule = ruleUnary, .cost = {4, "Out"},
               .grad = "sigmoid_grad"});
  d.push_back({.name = "sigmoid_grad", .spellings = {legacyName("sigmoid_grad"), pirName("pd_op.sigmoid_grad")},
               .inputs = {{"Out", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = dxOut(), .traits = trait::Grad,
               .rule = ruleGradOfOut, .cost = {3, "X@GRAD"}});
  std::vector<AttrDef> hardsigmoid_attrs = {{"slope", AttrKind::Float}, {"offset", AttrKind::Float}};
  d.push_back({.name = "hardsigmoid", .spellings = {legacyName("hard_sigmoid"), pirName("pd_op.hardsigmoid")}, .inputs = xIn(),
               .outputs = out0(), .attrs = hardsigmoid_attrs, .traits = kPointwise, .rule = ruleUnary, .cost = {4, "Out"},
               .grad = "hardsigmoid_grad"});
  d.push_back({.name = "hardsigmoid_grad", .spellings = {legacyName("hard_sigmoid_grad"), pirName("pd_op.hardsigmoid_grad")},
               .inputs = {{"Out", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = dxOut(), .attrs = hardsigmoid_attrs,
               .traits = trait::Grad, .rule = ruleGradOfOut, .cost = {3, "X@GRAD"}});
  std::vector<AttrDef> hardswish_attrs = {{"threshold", AttrKind::Float}, {"scale", AttrKind::Float}, {"offset", AttrKind::Float}};
  d.push_back({.name = "hardswish", .spellings = {legacyName("hard_swish"), pirName("pd_op.hardswish")}, .inputs = xIn(),
               .outputs = out0(), .attrs = hardswish_attrs, .traits = kPointwise, .rule = ruleHardswish, .cost = {5, "Out"},
               .grad = "hardswish_grad"});
  d.push_back({.name = "hardswish_grad", .spellings = {legacyName("hard_swish_grad"), pirName("pd_op.hardswish_grad")},
               .inputs = {{"X", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = dxOut(), .attrs = hardswish_attrs,
               .traits = trait::Grad, .rule = ruleHardswishGrad, .cost = {5, "X@GRAD"}});
  d.push_back({.name = "softmax", .spellings = {legacyName("softmax"), pirName("pd_op.softmax")}, .inputs = xIn(),
               .outputs = out0(), .attrs = {{"axis", AttrKind::Int}}, .traits = kPure, .rule = ruleSoftmax, .cost = {5, "Out"},
               .grad = "softmax_grad"});
  d.push_back({.name = "softmax_grad", .spellings = {legacyName("softmax_grad"), pirName("pd_op.softmax_grad")},
               .inputs = {{"Out", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = dxOut(),
               .attrs = {{"axis", AttrKind::Int}}, .traits = trait::Grad, .rule = ruleSoftmaxGrad, .cost = {4, "X@GRAD"}});
  // PIR's scale takes its factor as a Scalar operand (a pd_op.full).
  d.push_back({.name = "scale", .spellings = {legacyName("scale"), pirName("pd_op.scale"), pirName("pd_op.scale_", true)},
               .inputs = {{"X", {}, 0, true}, {"ScaleTensor"}}, .outputs = out0(),
               .attrs = {{"scale", AttrKind::Float, {}, 1}, {"bias", AttrKind::Float}, {"bias_after_scale", AttrKind::Bool}},
               .traits = kPointwise, .rule = ruleScale, .cost = {2, "Out"}, .grad = "scale"});
}

}  // namespace spopt::ops
