// The ops that enlarge a feature map (a detection head's, PP-OCRv5's): nearest_interp (v2) and
// conv2d_transpose, with their grads. Their size arithmetic is ops/interp_geometry.h and
// ops/conv_geometry.h, shared with the kernels.
#include "ir/json_text.h"
#include "ops/conv_geometry.h"
#include "ops/interp_geometry.h"
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

double upsampleNumel(const Var* v) {
  if (!v) return 0;
  int64_t n = v->numel();
  return n < 0 ? 0 : double(n);
}

bool channelsLast(const OpView& op, std::string_view key) {
  auto f = op.attrs.getString(key);
  return f && *f == "NHWC";
}

// nearest_interp(_grad): X [N, C, H, W] (NHWC: [N, H, W, C]) to Out of the size the attributes
// give; with an OutSize, SizeTensor or Scale operand the size is data and only replay checks it.
Result checkNearest(const OpView& op, bool grad) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  auto layout = op.attrs.getString("data_layout");
  if (layout && *layout != "NCHW" && *layout != "NHWC" && *layout != "AnyLayout")
    return fail(op, "/attrs/data_layout", "data_layout \"" + *layout + "\" is neither NCHW nor NHWC");
  auto method = op.attrs.getString("interp_method");
  if (method && *method != "nearest") return fail(op, "/attrs/interp_method", "interp_method \"" + *method + "\" is not nearest");
  if (!known(x)) return std::nullopt;
  if (x->shape.size() != 4) return fail(op, "/inputs/X/0", "X " + dimsText(x->shape) + " should be 4-D (NCHW or NHWC)");
  if (hasArg(op.input("OutSize")) || op.inputCount("SizeTensor") > 0 || hasArg(op.input("Scale"))) return std::nullopt;
  const bool last = channelsLast(op, "data_layout");
  InterpSources src;
  auto out_h = intAttr(op, "out_h", -1), out_w = intAttr(op, "out_w", -1);
  auto align = boolAttr(op, "align_corners", true);
  if (!out_h || !out_w || !align) return std::nullopt;
  src.out_h = *out_h, src.out_w = *out_w;
  if (auto raw = op.attrs.raw("scale")) src.scale = rawToNumberArray(*raw).value_or(std::vector<double>{});
  std::string why;
  auto r = resolveNearest2d(x->shape[last ? 1 : 2], x->shape[last ? 2 : 3], src, *align, &why);
  if (!r) return fail(op, "/attrs/scale", why);
  ShapeDims out = last ? ShapeDims{x->shape[0], r->h.out, r->w.out, x->shape[3]} : ShapeDims{x->shape[0], x->shape[1], r->h.out, r->w.out};
  if (!grad) {
    if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
    return requireDims(op, "/outputs", "Out", op.out("Out"), out, "X resized");
  }
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), out, "X resized")) return e;
  return requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape");
}
Result ruleNearest(const OpView& op) { return checkNearest(op, false); }
Result ruleNearestGrad(const OpView& op) { return checkNearest(op, true); }

// conv2d_transpose(_grad): Input [N, C, H, W], Filter [C, M / groups, kh, kw], Output [N, M, oh, ow].
Result checkConvTranspose(const OpView& op, bool grad) {
  const Var *x = op.in("Input"), *f = op.in("Filter");
  if (auto e = requireFloat(op, "Input", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Filter", f, "Input", x)) return e;
  auto format = op.attrs.getString("data_format");
  if (!known(x) || !known(f) || (format && *format != "NCHW" && *format != "AnyLayout")) return std::nullopt;
  if (x->shape.size() != 4 || f->shape.size() != 4)
    return fail(op, "/inputs/Filter/0", "Input " + dimsText(x->shape) + " and Filter " + dimsText(f->shape) + " should be 4-D (NCHW)");
  auto groups = intAttr(op, "groups", 1);
  if (!groups) return std::nullopt;
  if (*groups < 1 || x->shape[1] != f->shape[0] || f->shape[0] % *groups)
    return fail(op, "/attrs/groups", "Input's " + std::to_string(x->shape[1]) + " channels, Filter " + dimsText(f->shape) + " and groups " +
                                         std::to_string(*groups) + " do not agree");
  WindowAttrs a;
  auto strides = intsAttr(op, "strides", {1, 1}), paddings = intsAttr(op, "paddings", {0, 0});
  auto dilations = intsAttr(op, "dilations", {1, 1}), output_size = intsAttr(op, "output_size", {});
  auto output_padding = intsAttr(op, "output_padding", {});
  if (!strides || !paddings || !dilations || !output_size || !output_padding) return std::nullopt;
  a.strides = *strides, a.paddings = *paddings, a.dilations = *dilations, a.ksize = {f->shape[2], f->shape[3]};
  if (auto alg = op.attrs.getString("padding_algorithm")) a.padding_algorithm = *alg;
  std::string attr, why;
  auto w = resolveTransposeWindow(x->shape[2], x->shape[3], a, *output_size, *output_padding, &attr, &why);
  if (!w) return fail(op, "/attrs/" + attr, why);
  ShapeDims out = {x->shape[0], f->shape[1] * *groups, w->h.in, w->w.in};
  const char* what = "the transposed convolution of Input and Filter";
  if (!grad) return requireDims(op, "/outputs", "Output", op.out("Output"), out, what);
  if (auto e = requireDims(op, "/inputs", "Output@GRAD", op.in("Output@GRAD"), out, what)) return e;
  if (auto e = requireDims(op, "/outputs", "Input@GRAD", op.out("Input@GRAD"), x->shape, "Input's shape")) return e;
  return requireDims(op, "/outputs", "Filter@GRAD", op.out("Filter@GRAD"), f->shape, "Filter's shape");
}
Result ruleConvTranspose(const OpView& op) { return checkConvTranspose(op, false); }
Result ruleConvTransposeGrad(const OpView& op) { return checkConvTranspose(op, true); }

// Each input element meets a filter column of (M / groups) kh kw values: one multiply-add each.
double convTransposeFlops(const OpView& op) {
  const Var* f = op.in("Filter");
  if (!f || f->shape.size() != 4 || f->shape[0] <= 0) return 0;
  return 2.0 * upsampleNumel(op.in("Input")) * upsampleNumel(f) / double(f->shape[0]);
}
// The input gradient is a convolution and the filter gradient a GEMM, each the forward's size.
double flopsConvTransposeGrad(const OpView& op) {
  return convTransposeFlops(op) * double((op.out("Input@GRAD") ? 1 : 0) + (op.out("Filter@GRAD") ? 1 : 0));
}

}  // namespace

void addUpsampleOps(std::vector<OpDef>& d) {
  // Legacy writes the layout as data_layout, PIR as data_format; SizeTensor is PIR's Tensor[].
  std::vector<AttrDef> interp_attrs = {{"data_layout", AttrKind::String, "data_format"},
                                       {"out_d", AttrKind::Int},
                                       {"out_h", AttrKind::Int},
                                       {"out_w", AttrKind::Int},
                                       {"scale", AttrKind::Numbers},
                                       {"interp_method", AttrKind::String},
                                       {"align_corners", AttrKind::Bool},
                                       {"align_mode", AttrKind::Int}};
  OperandDef size_tensor{"SizeTensor", {}, 2};
  size_tensor.vector = true;
  d.push_back({.name = "nearest_interp", .spellings = {legacyName("nearest_interp_v2"), pirName("pd_op.nearest_interp")},
               .inputs = {{"X", {}, 0, true}, {"OutSize", {}, 1}, size_tensor, {"Scale", {}, 3}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = interp_attrs, .traits = trait::MovesOnly | trait::Recomputable,
               .rule = ruleNearest, .grad = "nearest_interp_grad"});
  // The grad reads X's shape only; each Out@GRAD element adds into the X@GRAD element it copied.
  d.push_back({.name = "nearest_interp_grad",
               .spellings = {legacyName("nearest_interp_v2_grad"), pirName("pd_op.nearest_interp_grad")},
               .inputs = {{"X", {}, 0, true, false}, {"OutSize", {}, 1}, size_tensor, {"Scale", {}, 3}, {"Out@GRAD", {}, 4, true}},
               .outputs = {{"X@GRAD", {}, 0, true}}, .attrs = interp_attrs, .traits = trait::Grad, .rule = ruleNearestGrad,
               .cost = {1, "Out@GRAD", true}});

  // PIR passes output_size as an IntArray operand (a pd_op.full_int_array, often empty).
  auto transpose_attrs = [](int output_size_operand) {
    return std::vector<AttrDef>{{"strides", AttrKind::Ints},
                                {"paddings", AttrKind::Ints},
                                {"output_padding", AttrKind::Ints},
                                {"output_size", AttrKind::Ints, {}, output_size_operand},
                                {"padding_algorithm", AttrKind::String},
                                {"groups", AttrKind::Int},
                                {"dilations", AttrKind::Ints},
                                {"data_format", AttrKind::String}};
  };
  d.push_back({.name = "conv2d_transpose", .spellings = {legacyName("conv2d_transpose"), pirName("pd_op.conv2d_transpose")},
               .inputs = {{"Input", {}, 0, true}, {"Filter", {}, 1, true}}, .outputs = {{"Output", {}, 0, true}},
               .attrs = transpose_attrs(2), .traits = trait::Recomputable | trait::Blas, .rule = ruleConvTranspose,
               .cost = {.flops = convTransposeFlops}, .grad = "conv2d_transpose_grad"});
  d.push_back({.name = "conv2d_transpose_grad", .spellings = {legacyName("conv2d_transpose_grad"), pirName("pd_op.conv2d_transpose_grad")},
               .inputs = {{"Input", {}, 0, true}, {"Filter", {}, 1, true}, {"Output@GRAD", {}, 2, true}},
               .outputs = {{"Input@GRAD", {}, 0}, {"Filter@GRAD", {}, 1}}, .attrs = transpose_attrs(3),
               .traits = trait::Grad | trait::Blas, .rule = ruleConvTransposeGrad, .cost = {.flops = flopsConvTransposeGrad}});
}

}  // namespace spopt::ops
