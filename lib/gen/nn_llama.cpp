// Llama's building blocks (see nn_llama.h).
#include "gen/nn_llama.h"


namespace spopt::gen {
namespace {
constexpr double kRmsEpsilon = 1e-6;
// Large enough that exp() of a masked score is 0 in every float type, small enough for float16.
constexpr double kMaskedScore = -1e4;

Tensor output(ProgramBuilder& b, std::string_view op, const Tensor& like, DType dtype) {
  return b.declare(b.names().unique(op) + ".tmp_0", like.shape, like.axes, dtype);
}
}  // namespace

RmsNorm rmsNorm(ProgramBuilder& b, const Tensor& x, DType dtype) {
  std::string name = b.names().unique("rms_norm");
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < x.shape.size(); ++i) rows *= x.shape[i];
  RmsNorm n;
  n.x = x;
  n.weight = parameter(b, name + ".w_0", {x.shape.back()}, {Axis::Rep}, dtype);
  n.y = b.declare(name + ".tmp_0", x.shape, x.axes, x.dtype);
  n.inv_var = b.declare(name + ".tmp_1", {rows}, {Axis::Rep}, statsType(dtype));
  b.op("rms_norm")
      .in("x", x)
      .in("norm_weight", n.weight)
      .out("out", n.y)
      .out("inv_var", n.inv_var)
      .real("epsilon", kRmsEpsilon)
      .integer("begin_norm_axis", int64_t(x.shape.size()) - 1);
  return n;
}

void rmsNormGrad(ProgramBuilder& b, const RmsNorm& n, const Tensor& dy, const Tensor* dx, const Tensor& dweight) {
  auto& op = b.op("rms_norm_grad").in("x", n.x).in("norm_weight", n.weight).in("inv_var", n.inv_var).in("out@GRAD", dy);
  if (dx) op.out("x@GRAD", *dx);
  op.out("norm_weight@GRAD", dweight).real("epsilon", kRmsEpsilon).integer("begin_norm_axis", int64_t(n.x.shape.size()) - 1);
}

Rotary rotary(ProgramBuilder& b, const Tensor& q, const Tensor& k, const Tensor& sin, const Tensor& cos) {
  Rotary r{q, k, sin, cos, {}, {}};
  std::string name = b.names().unique("fused_rotary_position_embedding");
  r.out_q = b.declare(name + ".tmp_0", q.shape, q.axes, q.dtype);
  r.out_k = b.declare(name + ".tmp_1", k.shape, k.axes, k.dtype);
  b.op("fused_rotary_position_embedding")
      .in("q", q)
      .in("k", k)
      .in("sin", sin)
      .in("cos", cos)
      .out("out_q", r.out_q)
      .out("out_k", r.out_k)
      .flag("use_neox_rotary_style", false)
      .flag("time_major", true)
      .real("rotary_emb_base", 10000.0);
  return r;
}

std::pair<Tensor, Tensor> rotaryGrad(ProgramBuilder& b, const Rotary& r, const Tensor& dout_q, const Tensor& dout_k) {
  Tensor dq = b.grad(r.q), dk = b.grad(r.k);
  b.op("fused_rotary_position_embedding_grad")
      .in("sin", r.sin)
      .in("cos", r.cos)
      .in("out_q@GRAD", dout_q)
      .in("out_k@GRAD", dout_k)
      .out("q@GRAD", dq)
      .out("k@GRAD", dk)
      .flag("use_neox_rotary_style", false)
      .flag("time_major", true)
      .real("rotary_emb_base", 10000.0);
  return {dq, dk};
}

Tensor swiglu(ProgramBuilder& b, const Tensor& gate, const Tensor& up) {
  Tensor out = output(b, "swiglu", gate, gate.dtype);
  b.op("swiglu").in("x", gate).in("y", up).out("out", out);
  return out;
}

void swigluGrad(ProgramBuilder& b, const Tensor& gate, const Tensor& up, const Tensor& dout, const Tensor& dgate,
                const Tensor& dup) {
  b.op("swiglu_grad").in("x", gate).in("y", up).in("out@GRAD", dout).out("x@GRAD", dgate).out("y@GRAD", dup);
}

CausalMask causalMask(ProgramBuilder& b, const Tensor& scores) {
  std::string layer_scope = b.scope();
  b.setScope("/causal_mask/");
  Tensor ones = output(b, "fill_any_like", scores, scores.dtype);
  b.op("fill_any_like").in("X", scores).out("Out", ones).real("value", 1.0).integer("dtype", -1);
  Tensor lower = output(b, "tril_triu", scores, scores.dtype);
  b.op("tril_triu").in("X", ones).out("Out", lower).integer("diagonal", 0).flag("lower", true);
  CausalMask m;
  m.keep = output(b, "cast", scores, DType::Bool);
  castInto(b, lower, m.keep);
  m.fill = output(b, "fill_any_like", scores, scores.dtype);
  b.op("fill_any_like").in("X", scores).out("Out", m.fill).real("value", kMaskedScore).integer("dtype", -1);
  b.setScope(layer_scope);
  return m;
}

Tensor applyMask(ProgramBuilder& b, const CausalMask& m, const Tensor& scores) {
  Tensor out = output(b, "where", scores, scores.dtype);
  b.op("where").in("Condition", m.keep).in("X", scores).in("Y", m.fill).out("Out", out);
  return out;
}

Tensor applyMaskGrad(ProgramBuilder& b, const CausalMask& m, const Tensor& scores, const Tensor& dout) {
  Tensor dx = b.grad(scores);
  b.op("where_grad").in("Condition", m.keep).in("X", scores).in("Y", m.fill).in("Out@GRAD", dout).out("X@GRAD", dx);
  return dx;
}

}  // namespace spopt::gen
