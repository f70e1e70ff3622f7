// The ops of a convolutional training job (Paddle's ResNet): conv2d, pool2d, batch_norm, the
// legacy mul, top_k_v2, accuracy and the momentum optimizer: definitions and their rules. The
// window arithmetic the rules and kernels share is ops/conv_geometry.h.
#include "ops/conv_geometry.h"
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

double valueCount(const Var* v) {
  if (!v) return 0;
  int64_t n = v->numel();
  return n < 0 ? 0 : double(n);
}

// The window attributes as the rule reads them; nullopt when one does not read (the attribute
// kind check reports it).
std::optional<WindowAttrs> windowAttrs(const OpView& op) {
  WindowAttrs a;
  auto strides = intsAttr(op, "strides", {1, 1});
  auto paddings = intsAttr(op, "paddings", {0, 0});
  auto dilations = intsAttr(op, "dilations", {1, 1});
  auto ksize = intsAttr(op, "ksize", {});
  auto ceil = boolAttr(op, "ceil_mode", false), global = boolAttr(op, "global_pooling", false), adaptive = boolAttr(op, "adaptive", false);
  if (!strides || !paddings || !dilations || !ksize || !ceil || !global || !adaptive) return std::nullopt;
  a.strides = *strides, a.paddings = *paddings, a.dilations = *dilations, a.ksize = *ksize;
  a.ceil_mode = *ceil, a.global_pooling = *global, a.adaptive = *adaptive;
  if (auto alg = op.attrs.getString("padding_algorithm")) a.padding_algorithm = *alg;
  return a;
}

bool channelsFirst(const OpView& op, std::string_view key) {
  auto f = op.attrs.getString(key);
  return !f || *f == "NCHW" || *f == "AnyLayout";
}

// conv2d(_grad): Input [N, C, H, W], Filter [M, C / groups, kh, kw], Output [N, M, oh, ow].
Result checkConv(const OpView& op, bool grad) {
  const Var *x = op.in("Input"), *f = op.in("Filter");
  if (auto e = requireFloat(op, "Input", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Filter", f, "Input", x)) return e;
  if (!known(x) || !known(f) || !channelsFirst(op, "data_format")) return std::nullopt;
  if (x->shape.size() != 4 || f->shape.size() != 4)
    return fail(op, "/inputs/Filter/0", "Input " + dimsText(x->shape) + " and Filter " + dimsText(f->shape) + " should be 4-D (NCHW)");
  auto groups = intAttr(op, "groups", 1);
  if (!groups) return std::nullopt;
  if (*groups < 1 || f->shape[0] % *groups || x->shape[1] != f->shape[1] * *groups)
    return fail(op, "/attrs/groups", "Input's " + std::to_string(x->shape[1]) + " channels, Filter " + dimsText(f->shape) + " and groups " +
                                         std::to_string(*groups) + " do not agree");
  auto a = windowAttrs(op);
  if (!a) return std::nullopt;
  a->ksize = {f->shape[2], f->shape[3]};
  std::string why;
  auto w = resolveWindow(x->shape[2], x->shape[3], *a, false, &why);
  if (!w) return fail(op, "/attrs/paddings", why);
  ShapeDims out = {x->shape[0], f->shape[0], w->h.out, w->w.out};
  if (!grad) return requireDims(op, "/outputs", "Output", op.out("Output"), out, "the convolution of Input and Filter");
  if (auto e = requireDims(op, "/inputs", "Output@GRAD", op.in("Output@GRAD"), out, "the convolution of Input and Filter")) return e;
  if (auto e = requireDims(op, "/outputs", "Input@GRAD", op.out("Input@GRAD"), x->shape, "Input's shape")) return e;
  return requireDims(op, "/outputs", "Filter@GRAD", op.out("Filter@GRAD"), f->shape, "Filter's shape");
}
Result ruleConv(const OpView& op) { return checkConv(op, false); }
Result ruleConvGrad(const OpView& op) { return checkConv(op, true); }

// pool2d(_grad): Out [N, C, oh, ow] of X [N, C, H, W].
Result checkPool(const OpView& op, bool grad) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  auto type = op.attrs.getString("pooling_type");
  if (type && *type != "max" && *type != "avg")
    return fail(op, "/attrs/pooling_type", "pooling_type \"" + *type + "\" is neither max nor avg");
  if (!known(x) || !channelsFirst(op, "data_format")) return std::nullopt;
  if (x->shape.size() != 4) return fail(op, "/inputs/X/0", "X " + dimsText(x->shape) + " should be 4-D (NCHW)");
  auto a = windowAttrs(op);
  if (!a) return std::nullopt;
  std::string why;
  auto w = resolveWindow(x->shape[2], x->shape[3], *a, true, &why);
  if (!w) return fail(op, "/attrs/ksize", why);
  ShapeDims out = {x->shape[0], x->shape[1], w->h.out, w->w.out};
  if (!grad) return requireDims(op, "/outputs", "Out", op.out("Out"), out, "X pooled");
  if (auto e = requireDims(op, "/inputs", "Out", op.in("Out"), out, "X pooled")) return e;
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), out, "X pooled")) return e;
  return requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape");
}
Result rulePool(const OpView& op) { return checkPool(op, false); }
Result rulePoolGrad(const OpView& op) { return checkPool(op, true); }

// batch_norm(_grad): the per-channel vectors hold C values (axis 1, or the last for NHWC).
Result checkBatchNorm(const OpView& op, bool grad) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (!known(x)) return std::nullopt;
  if (x->shape.size() < 2) return fail(op, "/inputs/X/0", "X " + dimsText(x->shape) + " should have at least 2 dims");
  int64_t c = channelsFirst(op, "data_layout") ? x->shape[1] : x->shape.back();
  auto count = [&](std::string_view dir, std::string_view slot, const Var* v) -> Result {
    if (!known(v) || v->numel() == c) return std::nullopt;
    return fail(op, std::string(dir) + "/" + std::string(slot) + "/0",
                std::string(slot) + " " + dimsText(v->shape) + " should hold " + std::to_string(c) + " values (X's channels)");
  };
  for (const char* s : {"Scale", "Bias", "Mean", "Variance"})
    if (auto e = count("/inputs", s, op.in(s))) return e;
  if (grad) {
    for (const char* s : {"SavedMean", "SavedVariance"})
      if (auto e = count("/inputs", s, op.in(s))) return e;
    if (auto e = requireDims(op, "/inputs", "Y@GRAD", op.in("Y@GRAD"), x->shape, "X's shape")) return e;
    if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape")) return e;
    for (const char* s : {"Scale@GRAD", "Bias@GRAD"})
      if (auto e = count("/outputs", s, op.out(s))) return e;
    return std::nullopt;
  }
  for (const char* s : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"})
    if (auto e = count("/outputs", s, op.out(s))) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Y", op.out("Y"), "X", x)) return e;
  return requireDims(op, "/outputs", "Y", op.out("Y"), x->shape, "X's shape");
}
Result ruleBatchNorm(const OpView& op) { return checkBatchNorm(op, false); }
Result ruleBatchNormGrad(const OpView& op) { return checkBatchNorm(op, true); }

// mul: X flattened at x_num_col_dims times Y flattened at y_num_col_dims.
Result checkMul(const OpView& op, bool grad) {
  const Var *x = op.in("X"), *y = op.in("Y");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Y", y, "X", x)) return e;
  if (!known(x) || !known(y)) return std::nullopt;
  auto xn = intAttr(op, "x_num_col_dims", 1), yn = intAttr(op, "y_num_col_dims", 1);
  if (!xn || !yn) return std::nullopt;
  if (*xn < 1 || *xn >= int64_t(x->shape.size()))
    return fail(op, "/attrs/x_num_col_dims", "x_num_col_dims " + std::to_string(*xn) + " is out of range for X " + dimsText(x->shape));
  if (*yn < 1 || *yn >= int64_t(y->shape.size()))
    return fail(op, "/attrs/y_num_col_dims", "y_num_col_dims " + std::to_string(*yn) + " is out of range for Y " + dimsText(y->shape));
  int64_t k = 1, ky = 1;
  for (size_t i = size_t(*xn); i < x->shape.size(); ++i) k *= x->shape[i];
  for (size_t i = 0; i < size_t(*yn); ++i) ky *= y->shape[i];
  if (k != ky)
    return fail(op, "/inputs/Y/0", "X " + dimsText(x->shape) + " flattened has " + std::to_string(k) + " columns but Y " +
                                       dimsText(y->shape) + " flattened has " + std::to_string(ky) + " rows");
  ShapeDims out(x->shape.begin(), x->shape.begin() + *xn);
  out.insert(out.end(), y->shape.begin() + *yn, y->shape.end());
  if (!grad) return requireDims(op, "/outputs", "Out", op.out("Out"), out, "X times Y");
  if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape")) return e;
  return requireDims(op, "/outputs", "Y@GRAD", op.out("Y@GRAD"), y->shape, "Y's shape");
}
Result ruleMul(const OpView& op) { return checkMul(op, false); }
Result ruleMulGrad(const OpView& op) { return checkMul(op, true); }

// momentum: Grad, Velocity and ParamOut, VelocityOut like Param; one learning rate.
Result ruleMomentum(const OpView& op) {
  const Var* param = op.in("Param");
  if (auto e = requireFloat(op, "Param", param)) return e;
  for (const char* s : {"Grad", "Velocity"}) {
    if (auto e = requireSameStorage(op, "/inputs", s, op.in(s), "Param", param)) return e;
    if (known(param))
      if (auto e = requireDims(op, "/inputs", s, op.in(s), param->shape, "Param's shape")) return e;
  }
  for (const char* s : {"ParamOut", "VelocityOut"})
    if (known(param))
      if (auto e = requireDims(op, "/outputs", s, op.out(s), param->shape, "Param's shape")) return e;
  const Var* lr = op.in("LearningRate");
  if (known(lr) && lr->numel() != 1)
    return fail(op, "/inputs/LearningRate/0", "LearningRate " + dimsText(lr->shape) + " should hold one element");
  auto reg = op.attrs.getString("regularization_method");
  if (reg && !reg->empty() && *reg != "l2_decay")
    return fail(op, "/attrs/regularization_method", "regularization_method \"" + *reg + "\" is neither empty nor l2_decay");
  return std::nullopt;
}

double convFlops(const OpView& op, const Var* out) {
  const Var* f = op.in("Filter");
  if (!f || f->shape.size() != 4) return 0;
  return 2.0 * valueCount(out) * valueCount(f) / double(f->shape[0] > 0 ? f->shape[0] : 1);
}
double flopsConv(const OpView& op) { return convFlops(op, op.out("Output")); }
// The input gradient and the filter gradient are each a GEMM the size of the forward one.
double flopsConvGrad(const OpView& op) {
  double fwd = convFlops(op, op.in("Output@GRAD"));
  return fwd * double((op.out("Input@GRAD") ? 1 : 0) + (op.out("Filter@GRAD") ? 1 : 0));
}
double poolWindow(const OpView& op) {
  auto k = intsAttr(op, "ksize", {1, 1});
  if (boolAttr(op, "global_pooling", false).value_or(false)) {
    const Var* x = op.in("X");
    return x && x->shape.size() == 4 && known(x) ? double(x->shape[2] * x->shape[3]) : 1.0;
  }
  return k && k->size() == 2 ? double((*k)[0] * (*k)[1]) : 1.0;
}
double flopsPool(const OpView& op) { return valueCount(op.out("Out")) * poolWindow(op); }
double flopsPoolGrad(const OpView& op) { return valueCount(op.in("Out@GRAD")) * poolWindow(op); }
double mulFlops(const OpView& op, const Var* out) {
  const Var* x = op.in("X");
  auto xn = intAttr(op, "x_num_col_dims", 1);
  if (!x || !xn || *xn < 0) return 0;
  double k = 1;
  for (size_t i = size_t(*xn); i < x->shape.size(); ++i) k *= double(x->shape[i] > 0 ? x->shape[i] : 0);
  return 2.0 * valueCount(out) * k;
}
double flopsMul(const OpView& op) { return mulFlops(op, op.out("Out")); }
double flopsMulGrad(const OpView& op) {
  return mulFlops(op, op.in("Out@GRAD")) * double((op.out("X@GRAD") ? 1 : 0) + (op.out("Y@GRAD") ? 1 : 0));
}

}  // namespace

void addVisionOps(std::vector<OpDef>& d) {
  std::vector<AttrDef> conv_attrs = {{"strides", AttrKind::Ints},        {"paddings", AttrKind::Ints},
                                     {"padding_algorithm", AttrKind::String}, {"dilations", AttrKind::Ints},
                                     {"groups", AttrKind::Int},          {"data_format", AttrKind::String}};
  // depthwise_conv2d is Paddle's conv2d with groups = channels under its own name (its own GPU
  // kernel): the same slots, attributes, shape rule and cost.
  struct ConvNames { std::string_view op, grad, pir, pir_grad; };  // literals: the catalogue keeps views
  for (const ConvNames& n : {ConvNames{"conv2d", "conv2d_grad", "pd_op.conv2d", "pd_op.conv2d_grad"},
                             ConvNames{"depthwise_conv2d", "depthwise_conv2d_grad", "pd_op.depthwise_conv2d",
                                       "pd_op.depthwise_conv2d_grad"}}) {
    d.push_back({.name = n.op, .spellings = {legacyName(n.op), pirName(n.pir)},
                 .inputs = {{"Input", {}, 0, true}, {"Filter", {}, 1, true}}, .outputs = {{"Output", {}, 0, true}},
                 .attrs = conv_attrs, .traits = trait::Recomputable | trait::Blas, .rule = ruleConv, .cost = {.flops = flopsConv},
                 .grad = n.grad});
    d.push_back({.name = n.grad, .spellings = {legacyName(n.grad), pirName(n.pir_grad)},
                 .inputs = {{"Input", {}, 0, true}, {"Filter", {}, 1, true}, {"Output@GRAD", {}, 2, true}},
                 .outputs = {{"Input@GRAD", {}, 0}, {"Filter@GRAD", {}, 1}}, .attrs = conv_attrs,
                 .traits = trait::Grad | trait::Blas, .rule = ruleConvGrad, .cost = {.flops = flopsConvGrad}});
  }

  // PIR passes the window as an IntArray operand (kernel_size).
  auto pool_attrs = [](int ksize_operand) {
    return std::vector<AttrDef>{{"ksize", AttrKind::Ints, "kernel_size", ksize_operand},
                                {"strides", AttrKind::Ints},
                                {"paddings", AttrKind::Ints},
                                {"padding_algorithm", AttrKind::String},
                                {"pooling_type", AttrKind::String},
                                {"ceil_mode", AttrKind::Bool},
                                {"exclusive", AttrKind::Bool},
                                {"global_pooling", AttrKind::Bool},
                                {"adaptive", AttrKind::Bool},
                                {"data_format", AttrKind::String}};
  };
  d.push_back({.name = "pool2d", .spellings = {legacyName("pool2d"), pirName("pd_op.pool2d")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = pool_attrs(1), .traits = trait::Recomputable, .rule = rulePool,
               .cost = {.flops = flopsPool}, .grad = "pool2d_grad"});
  // Only max pooling reads Out (to find each window's maximum); avg reads X's shape alone, but
  // the op is the same one for both.
  d.push_back({.name = "pool2d_grad", .spellings = {legacyName("pool2d_grad"), pirName("pd_op.pool2d_grad")},
               .inputs = {{"X", {}, 0, true}, {"Out", {}, 1, true}, {"Out@GRAD", {}, 2, true}},
               .outputs = {{"X@GRAD", {}, 0, true}}, .attrs = pool_attrs(3), .traits = trait::Grad, .rule = rulePoolGrad,
               .cost = {.flops = flopsPoolGrad}});

  // batch_norm updates the running statistics in place (MeanOut is Mean, VarianceOut Variance).
  std::vector<AttrDef> bn_attrs = {{"is_test", AttrKind::Bool},          {"momentum", AttrKind::Float},
                                   {"epsilon", AttrKind::Float},         {"data_layout", AttrKind::String, "data_format"},
                                   {"use_global_stats", AttrKind::Bool}, {"trainable_statistics", AttrKind::Bool}};
  d.push_back({.name = "batch_norm",
               .spellings = {legacyName("batch_norm"), pirName("pd_op.batch_norm"), pirName("pd_op.batch_norm_", true)},
               .inputs = {{"X", {}, 0, true}, {"Mean", {}, 1, true}, {"Variance", {}, 2, true}, {"Scale", {}, 3}, {"Bias", {}, 4},
                          {"MomentumTensor"}},
               .outputs = {{"Y", {}, 0, true}, {"MeanOut", {}, 1}, {"VarianceOut", {}, 2}, {"SavedMean", {}, 3},
                           {"SavedVariance", {}, 4}, {"ReserveSpace", {}, 5}},
               .attrs = bn_attrs, .traits = trait::InPlace, .rule = ruleBatchNorm, .cost = {8, "Y"}, .grad = "batch_norm_grad"});
  // The gradient never reads Bias; Mean and Variance (PIR's mean_out, variance_out) only with
  // global statistics.
  d.push_back({.name = "batch_norm_grad", .spellings = {legacyName("batch_norm_grad"), pirName("pd_op.batch_norm_grad")},
               .inputs = {{"X", {}, 0, true}, {"Scale", {}, 1}, {"Bias", {}, 2, false, false}, {"Mean", {}, 3}, {"Variance", {}, 4},
                          {"SavedMean", {}, 5, true}, {"SavedVariance", {}, 6, true}, {"ReserveSpace", {}, 7, false, false},
                          {"Y@GRAD", {}, 8, true}},
               .outputs = {{"X@GRAD", {}, 0}, {"Scale@GRAD", {}, 1}, {"Bias@GRAD", {}, 2}}, .attrs = bn_attrs,
               .traits = trait::Grad, .rule = ruleBatchNormGrad, .cost = {12, "X", true}});

  // Paddle's legacy mul is PIR's matmul_with_flatten.
  std::vector<AttrDef> mul_attrs = {{"x_num_col_dims", AttrKind::Int}, {"y_num_col_dims", AttrKind::Int}};
  d.push_back({.name = "mul", .spellings = {legacyName("mul"), pirName("pd_op.matmul_with_flatten")},
               .inputs = {{"X", {}, 0, true}, {"Y", {}, 1, true}}, .outputs = {{"Out", {}, 0, true}}, .attrs = mul_attrs,
               .traits = trait::Recomputable | trait::Blas, .rule = ruleMul, .cost = {.flops = flopsMul}, .grad = "mul_grad"});
  d.push_back({.name = "mul_grad", .spellings = {legacyName("mul_grad"), pirName("pd_op.matmul_with_flatten_grad")},
               .inputs = {{"X", {}, 0, true}, {"Y", {}, 1, true}, {"Out@GRAD", {}, 2, true}},
               .outputs = {{"X@GRAD", {}, 0}, {"Y@GRAD", {}, 1}}, .attrs = mul_attrs, .traits = trait::Grad | trait::Blas,
               .rule = ruleMulGrad, .cost = {.flops = flopsMulGrad}});

  // PIR passes k as a Scalar operand; legacy as the attribute or a K tensor.
  d.push_back({.name = "topk", .spellings = {legacyName("top_k_v2"), pirName("pd_op.topk")},
               .inputs = {{"X", {}, 0, true}, {"K"}}, .outputs = {{"Out", {}, 0, true}, {"Indices", {}, 1, true}},
               .attrs = {{"k", AttrKind::Int, {}, 1}, {"axis", AttrKind::Int}, {"largest", AttrKind::Bool}, {"sorted", AttrKind::Bool}},
               .traits = trait::Recomputable, .cost = {2, "X", true}});
  // accuracy reads the top-k indices; Out (their values) only for its shape.
  d.push_back({.name = "accuracy", .spellings = {legacyName("accuracy"), pirName("pd_op.accuracy")},
               .inputs = {{"Out", {}, 0, true, false}, {"Indices", {}, 1, true}, {"Label", {}, 2, true}},
               .outputs = {{"Accuracy", {}, 0, true}, {"Correct", {}, 1}, {"Total", {}, 2}}, .traits = trait::Recomputable,
               .cost = {1, "Indices", true}});

  d.push_back({.name = "momentum", .spellings = {legacyName("momentum"), pirName("pd_op.momentum_", true)},
               .inputs = {{"Param", {}, 0, true}, {"Grad", {}, 1, true}, {"Velocity", {}, 2, true}, {"LearningRate", {}, 3, true},
                          {"MasterParam", {}, 4}},
               .outputs = {{"ParamOut", {}, 0, true}, {"VelocityOut", {}, 1, true}, {"MasterParamOut", {}, 2}},
               .attrs = {{"mu", AttrKind::Float}, {"use_nesterov", AttrKind::Bool}, {"regularization_method", AttrKind::String},
                         {"regularization_coeff", AttrKind::Float}, {"multi_precision", AttrKind::Bool}, {"rescale_grad", AttrKind::Float}},
               .traits = trait::InPlace, .rule = ruleMomentum, .cost = {5, "Param", true}});
}

}  // namespace spopt::ops
