// The Llama layer's compute ops: rms_norm, silu, swiglu and fused_rotary_position_embedding, with
// their grads. They are PHI ops whose legacy programs use PHI's own (lower-case) slot names, so
// the canonical names are those: rms_norm(x, norm_weight) -> out, inv_var; its grad reads out@GRAD.
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

double llamaNumel(const Var* v) {
  if (!v) return 0;
  int64_t n = v->numel();
  return n < 0 ? 0 : double(n);
}

// x viewed as [rows, cols] split at begin_norm_axis (as layer_norm).
struct NormSplit {
  int64_t rows = 1, cols = 1;
};
std::optional<NormSplit> normSplit(const Var* x, int64_t axis) {
  int64_t r = int64_t(x->shape.size());
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) return std::nullopt;
  NormSplit s;
  for (int64_t d = 0; d < r; ++d) (d < axis ? s.rows : s.cols) *= x->shape[size_t(d)];
  return s;
}

Result requireCount(const OpView& op, std::string_view dir, std::string_view slot, const Var* v, int64_t n, const char* what) {
  if (!known(v) || v->numel() == n) return std::nullopt;
  return fail(op, std::string(dir) + "/" + std::string(slot) + "/0",
              std::string(slot) + " " + dimsText(v->shape) + " should hold " + std::to_string(n) + " values (" + what + ")");
}

// rms_norm(_grad): out (and x@GRAD, out@GRAD) shaped like x, norm_weight and norm_bias one value
// per normalised element, inv_var one per row.
Result checkRmsNorm(const OpView& op, bool grad) {
  const Var* x = op.in("x");
  if (auto e = requireFloat(op, "x", x)) return e;
  const char* y_dir = grad ? "/inputs" : "/outputs";
  const char* y_slot = grad ? "out@GRAD" : "out";
  const Var* y = grad ? op.in("out@GRAD") : op.out("out");
  if (auto e = requireSameStorage(op, y_dir, y_slot, y, "x", x)) return e;
  if (!known(x)) return std::nullopt;
  auto axis = intAttr(op, "begin_norm_axis", -1);
  if (!axis) return std::nullopt;
  auto s = normSplit(x, *axis);
  if (!s) return fail(op, "/attrs/begin_norm_axis", "begin_norm_axis " + std::to_string(*axis) + " is out of range for x " + dimsText(x->shape));
  if (auto e = requireDims(op, y_dir, y_slot, y, x->shape, "x's shape")) return e;
  if (auto e = requireCount(op, "/inputs", "norm_weight", op.in("norm_weight"), s->cols, "the normalised dims of x")) return e;
  if (auto e = requireCount(op, "/inputs", "norm_bias", op.in("norm_bias"), s->cols, "the normalised dims of x")) return e;
  const char* iv_dir = grad ? "/inputs" : "/outputs";
  if (auto e = requireCount(op, iv_dir, "inv_var", grad ? op.in("inv_var") : op.out("inv_var"), s->rows, "the leading dims of x")) return e;
  if (!grad) return std::nullopt;
  if (auto e = requireDims(op, "/outputs", "x@GRAD", op.out("x@GRAD"), x->shape, "x's shape")) return e;
  if (auto e = requireCount(op, "/outputs", "norm_weight@GRAD", op.out("norm_weight@GRAD"), s->cols, "the normalised dims of x")) return e;
  return requireCount(op, "/outputs", "norm_bias@GRAD", op.out("norm_bias@GRAD"), s->cols, "the normalised dims of x");
}
Result ruleRmsNorm(const OpView& op) { return checkRmsNorm(op, false); }
Result ruleRmsNormGrad(const OpView& op) { return checkRmsNorm(op, true); }

// silu: Out like X. silu_grad: Out@GRAD and X@GRAD like X.
Result ruleSilu(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  return known(x) ? requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape") : std::nullopt;
}
Result ruleSiluGrad(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), x->shape, "X's shape")) return e;
  return requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape");
}

// swiglu: out = silu(x) * y, or with no y, x's last dim halved: silu(first half) * second half.
std::optional<ShapeDims> swigluOutDims(const Var* x, const Var* y, std::string* why) {
  if (y) {
    if (x->shape != y->shape) {
      *why = "x " + dimsText(x->shape) + " and y " + dimsText(y->shape) + " differ";
      return std::nullopt;
    }
    return x->shape;
  }
  if (x->shape.empty() || x->shape.back() % 2 != 0) {
    *why = "with no y, x's last dim must be even: x is " + dimsText(x->shape);
    return std::nullopt;
  }
  ShapeDims d = x->shape;
  d.back() /= 2;
  return d;
}
Result checkSwiglu(const OpView& op, bool grad) {
  const Var *x = op.in("x"), *y = op.in("y");
  if (auto e = requireFloat(op, "x", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "y", y, "x", x)) return e;
  if (!known(x) || (y && !known(y))) return std::nullopt;
  std::string why;
  auto out = swigluOutDims(x, y, &why);
  if (!out) return fail(op, "/inputs/x/0", why);
  if (!grad) return requireDims(op, "/outputs", "out", op.out("out"), *out, "silu(x) * y");
  if (auto e = requireDims(op, "/inputs", "out@GRAD", op.in("out@GRAD"), *out, "swiglu's out")) return e;
  if (auto e = requireDims(op, "/outputs", "x@GRAD", op.out("x@GRAD"), x->shape, "x's shape")) return e;
  return y ? requireDims(op, "/outputs", "y@GRAD", op.out("y@GRAD"), y->shape, "y's shape") : std::nullopt;
}
Result ruleSwiglu(const OpView& op) { return checkSwiglu(op, false); }
Result ruleSwigluGrad(const OpView& op) { return checkSwiglu(op, true); }

// fused_rotary_position_embedding(_grad): q/k/v (or their grads) are 4-D with an even head_dim,
// each result shaped like its operand; sin and cos are [seq, head_dim] or [1, seq, 1, head_dim];
// position_ids is [batch, seq].
Result checkRope(const OpView& op, bool grad) {
  static constexpr const char* kIn[3] = {"q", "k", "v"};
  static constexpr const char* kInGrad[3] = {"out_q@GRAD", "out_k@GRAD", "out_v@GRAD"};
  static constexpr const char* kOut[3] = {"out_q", "out_k", "out_v"};
  static constexpr const char* kOutGrad[3] = {"q@GRAD", "k@GRAD", "v@GRAD"};
  const Var* q = op.in(grad ? kInGrad[0] : kIn[0]);
  if (auto e = requireFloat(op, grad ? kInGrad[0] : kIn[0], q)) return e;
  if (!known(q)) return std::nullopt;
  bool time_major = op.attrs.getBool("time_major").value_or(false);
  for (int i = 0; i < 3; ++i) {
    const char* in_slot = grad ? kInGrad[i] : kIn[i];
    const char* out_slot = grad ? kOutGrad[i] : kOut[i];
    const Var* t = op.in(in_slot);
    if (!known(t)) continue;
    if (t->shape.size() != 4 || t->shape[3] % 2 != 0)
      return fail(op, "/inputs/" + std::string(in_slot) + "/0",
                  std::string(in_slot) + " " + dimsText(t->shape) + " should be [batch, seq, heads, head_dim] with an even head_dim");
    if (auto e = requireSameStorage(op, "/inputs", in_slot, t, grad ? kInGrad[0] : kIn[0], q)) return e;
    if (t->shape[0] != q->shape[0] || t->shape[1] != q->shape[1] || t->shape[3] != q->shape[3])
      return fail(op, "/inputs/" + std::string(in_slot) + "/0",
                  std::string(in_slot) + " " + dimsText(t->shape) + " differs from " + (grad ? kInGrad[0] : kIn[0]) + " " + dimsText(q->shape) +
                      " outside the heads dim");
    if (auto e = requireDims(op, "/outputs", out_slot, op.out(out_slot), t->shape, std::string(in_slot) + "'s shape")) return e;
  }
  int64_t batch = q->shape[time_major ? 1 : 0], seq = q->shape[time_major ? 0 : 1], dim = q->shape[3];
  const Var* pos = op.in("position_ids");
  if (known(pos) && pos->shape != ShapeDims{batch, seq})
    return fail(op, "/inputs/position_ids/0", "position_ids " + dimsText(pos->shape) + " should be [batch, seq] = " + dimsText({batch, seq}));
  for (const char* slot : {"sin", "cos"}) {
    const Var* t = op.in(slot);
    if (!known(t)) continue;
    if (auto e = requireSameStorage(op, "/inputs", slot, t, grad ? kInGrad[0] : kIn[0], q)) return e;
    const ShapeDims& s = t->shape;
    bool two = s.size() == 2, four = s.size() == 4 && s[0] == 1 && s[2] == 1;
    int64_t rows = two ? s[0] : four ? s[1] : -1;
    // Without position ids, row s of sin/cos rotates position s; with them, any row may be named.
    if (!(two || four) || s.back() != dim || (!pos && rows != seq))
      return fail(op, "/inputs/" + std::string(slot) + "/0",
                  std::string(slot) + " " + dimsText(s) + " should be [seq, head_dim] or [1, seq, 1, head_dim] with head_dim " + std::to_string(dim) +
                      (pos ? "" : " and seq " + std::to_string(seq)));
  }
  return std::nullopt;
}
Result ruleRope(const OpView& op) { return checkRope(op, false); }
Result ruleRopeGrad(const OpView& op) { return checkRope(op, true); }

double flopsRope(const OpView& op) {
  // Two products and a sum per element of each rotated tensor.
  bool grad = op.def() && op.def()->has(trait::Grad);
  double n = 0;
  for (const char* s : {"out_q", "out_k", "out_v"}) n += llamaNumel(grad ? op.in(std::string(s) + "@GRAD") : op.out(s));
  return 3 * n;
}

}  // namespace

void addLlamaOps(std::vector<OpDef>& d) {
  // bias and residual (a fused pre-add) and quantisation are Paddle inference options: the kernel
  // refuses them; training uses x, norm_weight and inv_var.
  std::vector<AttrDef> rms_attrs = {{"epsilon", AttrKind::Float}, {"begin_norm_axis", AttrKind::Int},
                                    {"quant_scale", AttrKind::Float}, {"quant_round_type", AttrKind::Int},
                                    {"quant_max_bound", AttrKind::Float}, {"quant_min_bound", AttrKind::Float}};
  d.push_back({.name = "rms_norm", .spellings = {legacyName("rms_norm"), pirName("pd_op.rms_norm")},
               .inputs = {{"x", {}, 0, true}, {"bias", {}, 1}, {"residual", {}, 2}, {"norm_weight", {}, 3}, {"norm_bias", {}, 4}},
               .outputs = {{"out", {}, 0, true}, {"residual_out", {}, 1}, {"inv_var", {}, 2}}, .attrs = rms_attrs,
               .traits = trait::Recomputable, .rule = ruleRmsNorm, .cost = {4, "out"}, .grad = "rms_norm_grad"});
  // norm_bias's gradient is a sum of out@GRAD: its values are never read.
  d.push_back({.name = "rms_norm_grad", .spellings = {legacyName("rms_norm_grad"), pirName("pd_op.rms_norm_grad")},
               .inputs = {{"x", {}, 0, true}, {"bias", {}, 1, false, false}, {"residual", {}, 2, false, false}, {"norm_weight", {}, 3},
                          {"norm_bias", {}, 4, false, false}, {"inv_var", {}, 5, true}, {"out@GRAD", {}, 6, true}},
               .outputs = {{"x@GRAD", {}, 0}, {"norm_weight@GRAD", {}, 1}, {"norm_bias@GRAD", {}, 2}}, .attrs = rms_attrs,
               .traits = trait::Grad, .rule = ruleRmsNormGrad, .cost = {8, "x", true}});
  d.push_back({.name = "silu", .spellings = {legacyName("silu"), pirName("pd_op.silu")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .traits = trait::Elementwise | trait::Recomputable, .rule = ruleSilu,
               .cost = {4, "Out"}, .grad = "silu_grad"});
  // The slope x s + s (1 - x s) needs only X (s = sigmoid(x)): Out's buffer is never read.
  d.push_back({.name = "silu_grad", .spellings = {legacyName("silu_grad"), pirName("pd_op.silu_grad")},
               .inputs = {{"X", {}, 0, true}, {"Out", {}, 1, false, false}, {"Out@GRAD", {}, 2, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .traits = trait::Grad, .rule = ruleSiluGrad, .cost = {6, "X@GRAD"}});
  d.push_back({.name = "swiglu", .spellings = {legacyName("swiglu"), pirName("pd_op.swiglu")}, .inputs = {{"x", {}, 0, true}, {"y", {}, 1}},
               .outputs = {{"out", {}, 0, true}}, .traits = trait::Recomputable, .rule = ruleSwiglu, .cost = {5, "out"},
               .grad = "swiglu_grad"});
  d.push_back({.name = "swiglu_grad", .spellings = {legacyName("swiglu_grad"), pirName("pd_op.swiglu_grad")},
               .inputs = {{"x", {}, 0, true}, {"y", {}, 1}, {"out@GRAD", {}, 2, true}}, .outputs = {{"x@GRAD", {}, 0}, {"y@GRAD", {}, 1}},
               .traits = trait::Grad, .rule = ruleSwigluGrad, .cost = {10, "out@GRAD", true}});
  // sin and cos are given (Paddle computes them from rotary_emb_base otherwise: the kernel refuses
  // that); position_ids, when present, picks their row for each (batch, seq): replay generates ids
  // within the rows of a [1, seq, 1, head_dim] table (dim -3; a [seq, head_dim] one has none).
  std::vector<AttrDef> rope_attrs = {{"use_neox_rotary_style", AttrKind::Bool}, {"time_major", AttrKind::Bool},
                                     {"rotary_emb_base", AttrKind::Float}};
  OperandDef sin{"sin", {}, 3}, cos{"cos", {}, 4};
  sin.rotary = RotaryTable::Sin;
  cos.rotary = RotaryTable::Cos;
  d.push_back({.name = "fused_rotary_position_embedding",
               .spellings = {legacyName("fused_rotary_position_embedding"), pirName("pd_op.fused_rotary_position_embedding")},
               .inputs = {{"q", {}, 0, true}, {"k", {}, 1}, {"v", {}, 2}, sin, cos,
                          {"position_ids", {}, 5, false, true, "sin", -3}},
               .outputs = {{"out_q", {}, 0, true}, {"out_k", {}, 1}, {"out_v", {}, 2}}, .attrs = rope_attrs,
               .traits = trait::Recomputable, .rule = ruleRope, .cost = {.flops = flopsRope},
               .grad = "fused_rotary_position_embedding_grad"});
  OperandDef grad_sin = sin, grad_cos = cos;
  grad_sin.pir = 0;
  grad_cos.pir = 1;
  d.push_back({.name = "fused_rotary_position_embedding_grad",
               .spellings = {legacyName("fused_rotary_position_embedding_grad"), pirName("pd_op.fused_rotary_position_embedding_grad")},
               .inputs = {grad_sin, grad_cos, {"position_ids", {}, 2}, {"out_q@GRAD", {}, 3, true}, {"out_k@GRAD", {}, 4},
                          {"out_v@GRAD", {}, 5}},
               .outputs = {{"q@GRAD", {}, 0}, {"k@GRAD", {}, 1}, {"v@GRAD", {}, 2}}, .attrs = rope_attrs, .traits = trait::Grad,
               .rule = ruleRopeGrad, .cost = {.flops = flopsRope}});
}

}  // namespace spopt::ops
