// Forward building blocks (see nn.h).
#include "gen/nn.h"

#include "gen/training.h"

namespace spopt::gen {

DType statsType(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

Tensor parameter(ProgramBuilder& b, std::string name, std::vector<int64_t> shape, std::vector<Axis> axes, DType dtype) {
  MixedPrecision* amp = b.mixedPrecision();
  if (!amp) return b.declare(std::move(name), std::move(shape), std::move(axes), dtype, /*persistable=*/true);
  Tensor master = b.declare(name, shape, axes, DType::Float32, /*persistable=*/true);
  Tensor copy = b.declare(name + ".cast_bf16", std::move(shape), std::move(axes), amp->compute);
  castInto(b, master, copy);
  amp->masters.emplace(copy.name, master);
  return copy;
}

void castInto(ProgramBuilder& b, const Tensor& x, const Tensor& out) {
  b.op("cast").in("X", x).out("Out", out).integer("in_dtype", paddleDataType(x.dtype)).integer("out_dtype", paddleDataType(out.dtype));
}

namespace {
// The output of an op named the way Paddle's LayerHelper names it: "<op>_<n>.tmp_0".
std::string outputName(ProgramBuilder& b, std::string_view op) { return b.names().unique(op) + ".tmp_0"; }

std::vector<int64_t> withLast(std::vector<int64_t> v, int64_t last) {
  v.back() = last;
  return v;
}
std::vector<Axis> withLast(std::vector<Axis> v, Axis last) {
  v.back() = last;
  return v;
}
}  // namespace

LayerNorm layerNorm(ProgramBuilder& b, const Tensor& x, DType dtype, bool bias_trainable) {
  std::string name = b.names().unique("layer_norm");
  int64_t h = x.shape.back(), rows = 1;
  for (size_t i = 0; i + 1 < x.shape.size(); ++i) rows *= x.shape[i];
  LayerNorm ln;
  ln.bias_trainable = bias_trainable;
  ln.x = x;
  ln.scale = parameter(b, name + ".w_0", {h}, {Axis::Rep}, dtype);
  ln.bias = parameter(b, name + ".b_0", {h}, {Axis::Rep}, dtype);
  ln.mean = b.declare(name + ".tmp_0", {rows}, {Axis::Rep}, statsType(dtype));
  ln.variance = b.declare(name + ".tmp_1", {rows}, {Axis::Rep}, statsType(dtype));
  ln.y = b.declare(name + ".tmp_2", x.shape, x.axes, x.dtype);
  b.op("layer_norm")
      .in("X", x)
      .in("Scale", ln.scale)
      .in("Bias", ln.bias)
      .out("Y", ln.y)
      .out("Mean", ln.mean)
      .out("Variance", ln.variance)
      .real("epsilon", 1e-5)
      .integer("begin_norm_axis", int64_t(x.shape.size()) - 1);
  return ln;
}

Tensor gelu(ProgramBuilder& b, const Tensor& x) {
  Tensor y = b.declare(outputName(b, "gelu"), x.shape, x.axes, x.dtype);
  b.op("gelu").in("X", x).out("Out", y).flag("approximate", true);
  return y;
}

Dropout dropout(ProgramBuilder& b, const Tensor& x, double prob) {
  Dropout d;
  // The op's ordinal seeds it: its mask is the same under any renaming of its vars (a PIR file
  // keeps no names) and for a recomputed copy of the op.
  d.seed = b.names().issued("dropout") + 1;
  std::string name = b.names().unique("dropout");
  d.x = x;
  d.prob = prob;
  d.out = b.declare(name + ".tmp_0", x.shape, x.axes, x.dtype);
  d.mask = b.declare(name + ".tmp_1", x.shape, x.axes, DType::UInt8);
  b.op("dropout")
      .in("X", x)
      .out("Out", d.out)
      .out("Mask", d.mask)
      .real("dropout_prob", prob)
      .flag("is_test", false)
      .integer("seed", d.seed)
      .flag("fix_seed", true)
      .text("dropout_implementation", "upscale_in_train");
  return d;
}

Linear linear(ProgramBuilder& b, const Tensor& x, std::vector<Axis> w_axes, int64_t local_in, int64_t local_out) {
  std::string name = b.names().unique("linear");
  Linear l;
  l.x = x;
  l.w = parameter(b, name + ".w_0", {local_in, local_out}, w_axes, x.dtype);
  l.out = b.declare(name + ".tmp_0", withLast(x.shape, local_out), withLast(x.axes, w_axes[1]), x.dtype);
  b.op("matmul_v2").in("X", x).in("Y", l.w).out("Out", l.out).flag("trans_x", false).flag("trans_y", false);
  return l;
}

Tensor matmul(ProgramBuilder& b, const Tensor& x, const Tensor& y, bool trans_y, std::vector<int64_t> shape,
              std::vector<Axis> axes) {
  Tensor out = b.declare(outputName(b, "matmul_v2"), std::move(shape), std::move(axes), x.dtype);
  b.op("matmul_v2").in("X", x).in("Y", y).out("Out", out).flag("trans_x", false).flag("trans_y", trans_y);
  return out;
}

Tensor scale(ProgramBuilder& b, const Tensor& x, double factor) {
  Tensor y = b.declare(outputName(b, "scale"), x.shape, x.axes, x.dtype);
  b.op("scale").in("X", x).out("Out", y).real("scale", factor).real("bias", 0.0).flag("bias_after_scale", true);
  return y;
}

Tensor softmax(ProgramBuilder& b, const Tensor& x) {
  Tensor y = b.declare(outputName(b, "softmax"), x.shape, x.axes, x.dtype);
  b.op("softmax").in("X", x).out("Out", y).integer("axis", -1);
  return y;
}

Tensor add(ProgramBuilder& b, const Tensor& x, const Tensor& y) {
  Tensor out = b.like(x);
  b.op("elementwise_add").in("X", x).in("Y", y).out("Out", out).integer("axis", -1);
  return out;
}

std::pair<Tensor, Tensor> reshape(ProgramBuilder& b, const Tensor& x, std::vector<int64_t> shape_attr,
                                  std::vector<int64_t> out_shape, std::vector<Axis> out_axes) {
  std::string name = b.names().unique("reshape2");
  Tensor out = b.declare(name + ".tmp_0", std::move(out_shape), std::move(out_axes), x.dtype);
  std::vector<int64_t> xs_shape{0};
  std::vector<Axis> xs_axes{Axis::Rep};
  xs_shape.insert(xs_shape.end(), x.shape.begin(), x.shape.end());
  xs_axes.insert(xs_axes.end(), x.axes.begin(), x.axes.end());
  Tensor xshape = b.declare(name + ".tmp_1", xs_shape, xs_axes, x.dtype);
  b.op("reshape2").in("X", x).out("Out", out).out("XShape", xshape).ints("shape", shape_attr);
  return {out, xshape};
}

std::pair<Tensor, Tensor> transpose(ProgramBuilder& b, const Tensor& x, std::vector<int64_t> perm) {
  std::string name = b.names().unique("transpose");
  std::vector<int64_t> shape;
  std::vector<Axis> axes;
  for (int64_t p : perm) {
    shape.push_back(x.shape[size_t(p)]);
    axes.push_back(x.axes[size_t(p)]);
  }
  Tensor out = b.declare(name + ".tmp_0", shape, axes, x.dtype);
  std::vector<int64_t> xs_shape{0};
  std::vector<Axis> xs_axes{Axis::Rep};
  xs_shape.insert(xs_shape.end(), x.shape.begin(), x.shape.end());
  xs_axes.insert(xs_axes.end(), x.axes.begin(), x.axes.end());
  Tensor xshape = b.declare(name + ".tmp_1", xs_shape, xs_axes, x.dtype);
  b.op("transpose2").in("X", x).out("Out", out).out("XShape", xshape).ints("axis", perm);
  return {out, xshape};
}

std::vector<Tensor> split(ProgramBuilder& b, const Tensor& x, int axis, int64_t num) {
  std::string name = b.names().unique("split");
  std::vector<int64_t> shape = x.shape;
  shape[size_t(axis)] /= num;
  std::vector<Tensor> outs;
  for (int64_t i = 0; i < num; ++i)
    outs.push_back(b.declare(name + ".tmp_" + std::to_string(i), shape, x.axes, x.dtype));
  b.op("split").in("X", x).out("Out", outs).integer("axis", axis).integer("num", num).ints("sections", {});
  return outs;
}

}  // namespace spopt::gen
