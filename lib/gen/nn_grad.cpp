// Backward building blocks (see nn.h): Paddle's grad ops, reading the forward vars they need.
#include "gen/nn.h"

namespace spopt::gen {

void layerNormGrad(ProgramBuilder& b, const LayerNorm& ln, const Tensor& dy, const Tensor* dx, const Tensor& dscale,
                   const Tensor* dbias) {
  auto& op = b.op("layer_norm_grad")
                 .in("X", ln.x)
                 .in("Scale", ln.scale)
                 .in("Bias", ln.bias)
                 .in("Mean", ln.mean)
                 .in("Variance", ln.variance)
                 .in("Y@GRAD", dy);
  if (dx) op.out("X@GRAD", *dx);
  op.out("Scale@GRAD", dscale);
  if (dbias) op.out("Bias@GRAD", *dbias);
  op.real("epsilon", 1e-5).integer("begin_norm_axis", int64_t(ln.x.shape.size()) - 1);
}

Tensor geluGrad(ProgramBuilder& b, const Tensor& x, const Tensor& dy) {
  Tensor dx = b.grad(x);
  b.op("gelu_grad").in("X", x).in("Out@GRAD", dy).out("X@GRAD", dx).flag("approximate", true);
  return dx;
}

Tensor dropoutGrad(ProgramBuilder& b, const Dropout& d, const Tensor& dy) {
  Tensor dx = b.grad(d.x);
  b.op("dropout_grad")
      .in("Mask", d.mask)
      .in("Out@GRAD", dy)
      .out("X@GRAD", dx)
      .real("dropout_prob", d.prob)
      .flag("is_test", false)
      .integer("seed", d.seed)
      .flag("fix_seed", true)
      .text("dropout_implementation", "upscale_in_train");
  return dx;
}

void matmulGrad(ProgramBuilder& b, const Tensor& x, const Tensor& y, const Tensor& dout, bool trans_y, const Tensor* dx,
                const Tensor* dy) {
  auto& op = b.op("matmul_v2_grad").in("X", x).in("Y", y).in("Out@GRAD", dout);
  if (dx) op.out("X@GRAD", *dx);
  if (dy) op.out("Y@GRAD", *dy);
  op.flag("trans_x", false).flag("trans_y", trans_y);
}

Tensor scaleGrad(ProgramBuilder& b, const Tensor& dout, double factor, const Tensor& x) {
  Tensor dx = b.grad(x);
  b.op("scale").in("X", dout).out("Out", dx).real("scale", factor).real("bias", 0.0).flag("bias_after_scale", true);
  return dx;
}

Tensor softmaxGrad(ProgramBuilder& b, const Tensor& out, const Tensor& dout, const Tensor& x) {
  Tensor dx = b.grad(x);
  b.op("softmax_grad").in("Out", out).in("Out@GRAD", dout).out("X@GRAD", dx).integer("axis", -1);
  return dx;
}

void addGrad(ProgramBuilder& b, const Tensor& x, const Tensor& y, const Tensor& dout, const Tensor* dx, const Tensor* dy) {
  auto& op = b.op("elementwise_add_grad").in("X", x).in("Y", y).in("Out@GRAD", dout);
  if (dx) op.out("X@GRAD", *dx);
  if (dy) op.out("Y@GRAD", *dy);
  op.integer("axis", -1);
}

Tensor reshapeGrad(ProgramBuilder& b, const Tensor& xshape, const Tensor& dout, const Tensor& x) {
  Tensor dx = b.grad(x);
  b.op("reshape2_grad").in("XShape", xshape).in("Out@GRAD", dout).out("X@GRAD", dx);
  return dx;
}

Tensor transposeGrad(ProgramBuilder& b, const Tensor& xshape, const Tensor& dout, std::vector<int64_t> perm,
                     const Tensor& x) {
  Tensor dx = b.grad(x);
  b.op("transpose2_grad").in("XShape", xshape).in("Out@GRAD", dout).out("X@GRAD", dx).ints("axis", perm);
  return dx;
}

Tensor concatGrads(ProgramBuilder& b, const std::vector<Tensor>& douts, int axis, const Tensor& x) {
  Tensor dx = b.grad(x);
  b.op("concat").in("X", douts).out("Out", dx).integer("axis", axis);
  return dx;
}

Tensor sumGrads(ProgramBuilder& b, const std::vector<Tensor>& parts, const Tensor& x) {
  Tensor dx = b.grad(x);
  sumInto(b, parts, dx);
  return dx;
}

void sumInto(ProgramBuilder& b, const std::vector<Tensor>& parts, const Tensor& out) { b.op("sum").in("X", parts).out("Out", out); }

}  // namespace spopt::gen
