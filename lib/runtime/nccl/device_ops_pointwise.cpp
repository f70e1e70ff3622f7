// Device activations (relu, gelu, scale), softmax and dropout, with grads.
#include <cmath>

#include "runtime/inputs.h"
#include "runtime/kernels/dropout_hash.h"
#include "runtime/nccl/device_op_util.h"

namespace spopt::rt::device_ops {
namespace {

// ---- activations ----

bool relu(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  likeInput(c, "X", x, "Out", o);
  byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::relu<T>(x.data<T>(), o.data<T>(), x.numel, c.stream); });
  return true;
}
bool reluGrad(DeviceOpContext& c) {
  const DevTensor& o = in(c, "Out");
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  likeInput(c, "Out", o, "Out@GRAD", g);
  likeInput(c, "Out", o, "X@GRAD", dx);
  byFloat(o, [&](auto tag) { using T = decltype(tag); cuda::reluGrad<T>(o.data<T>(), g.data<T>(), dx.data<T>(), o.numel, c.stream); });
  return true;
}
bool gelu(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  likeInput(c, "X", x, "Out", o);
  bool approx = boolAttr(c.host, "approximate", false);
  byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::gelu<T>(x.data<T>(), o.data<T>(), x.numel, approx, c.stream); });
  return true;
}
bool geluGrad(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  likeInput(c, "X", x, "Out@GRAD", g);
  likeInput(c, "X", x, "X@GRAD", dx);
  bool approx = boolAttr(c.host, "approximate", false);
  byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::geluGrad<T>(x.data<T>(), g.data<T>(), dx.data<T>(), x.numel, approx, c.stream); });
  return true;
}

bool scale(DeviceOpContext& c) {
  if (c.io.input("ScaleTensor")) return false;  // a device scalar: the CPU kernel reads it
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  sameStorage(c, "Out", o, "X", x);
  sameShape(c, "Out", o, "X", x);
  double s = floatAttr(c.host, "scale", 1.0), b = floatAttr(c.host, "bias", 0.0);
  bool after = boolAttr(c.host, "bias_after_scale", true);
  if (x.storage() == Storage::I64) {
    cuda::affineInt(x.data<int64_t>(), o.data<int64_t>(), x.numel, s, b, after, c.stream);
    return true;
  }
  requireFloatDev(c, "X", x);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    cuda::affine<T>(x.data<T>(), o.data<T>(), x.numel, T(s), after ? T(b) : T(s * b), c.stream);
  });
  return true;
}

struct AxisView {
  int64_t outer, len, inner;
};
AxisView axisView(DeviceOpContext& c, const Dims& shape) {
  if (shape.empty()) return {1, 1, 1};
  int64_t a = normaliseAxis(c.host, intAttr(c.host, "axis", -1), shape.size(), "axis");
  return {product(shape, 0, size_t(a)), shape[size_t(a)], product(shape, size_t(a) + 1)};
}

bool softmax(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  likeInput(c, "X", x, "Out", o);
  AxisView v = axisView(c, x.shape);
  byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::softmax<T>(x.data<T>(), o.data<T>(), v.outer, v.len, v.inner, c.stream); });
  return true;
}
bool softmaxGrad(DeviceOpContext& c) {
  const DevTensor& o = in(c, "Out");
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  likeInput(c, "Out", o, "Out@GRAD", g);
  likeInput(c, "Out", o, "X@GRAD", dx);
  AxisView v = axisView(c, o.shape);
  byFloat(o, [&](auto tag) {
    using T = decltype(tag);
    cuda::softmaxGrad<T>(o.data<T>(), g.data<T>(), dx.data<T>(), v.outer, v.len, v.inner, c.stream);
  });
  return true;
}

// ---- dropout: the CPU kernel's attributes and hash (dropout.cpp, dropout_hash.h) ----

struct DropoutAttrs {
  double p;
  bool is_test, upscale;
  double kept() const { return upscale ? (p < 1.0 ? 1.0 / (1.0 - p) : 0.0) : 1.0; }
  double test() const { return upscale ? 1.0 : 1.0 - p; }
};
DropoutAttrs dropoutAttrs(DeviceOpContext& c) {
  DropoutAttrs a;
  a.p = floatAttr(c.host, "dropout_prob", 0.5);
  if (!(a.p >= 0.0 && a.p <= 1.0)) kernelFail(c.host, "dropout_prob " + std::to_string(a.p) + " is outside [0, 1]");
  a.is_test = boolAttr(c.host, "is_test", false);
  std::string impl = stringAttr(c.host, "dropout_implementation", "downgrade_in_infer");
  if (impl != "downgrade_in_infer" && impl != "upscale_in_train")
    kernelFail(c.host, "dropout_implementation \"" + impl + "\" is neither downgrade_in_infer nor upscale_in_train");
  a.upscale = impl == "upscale_in_train";
  return a;
}
void requireMask(DeviceOpContext& c, const DevTensor& m, std::string_view like_name, const DevTensor& like) {
  if (m.storage() != Storage::U8) kernelFail(c.host, "Mask is " + std::string(dtypeName(m.dtype)) + ", not uint8 or bool");
  sameShape(c, "Mask", m, like_name, like);
}

bool dropout(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  DevTensor* mask = c.io.output("Mask");
  likeInput(c, "X", x, "Out", o);
  if (mask) requireMask(c, *mask, "X", x);
  DropoutAttrs a = dropoutAttrs(c);
  if (a.is_test) {
    byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::affine<T>(x.data<T>(), o.data<T>(), x.numel, T(a.test()), T(0), c.stream); });
    if (mask) cuda::fill<uint8_t>(mask->data<uint8_t>(), mask->numel, 1, c.stream);
    return true;
  }
  const Slot* mask_slot = c.host.op.output("Mask");
  std::string_view mask_name = mask_slot && !mask_slot->args.empty() ? mask_slot->args[0].name : std::string_view();
  uint64_t stream = dropout_hash::stream(c.host.seed, uint64_t(intAttr(c.host, "seed", 0)), fnv1a64(mask_name), uint64_t(c.host.rank));
  const uint64_t threshold = uint64_t(std::ceil(a.p * 9007199254740992.0));
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    cuda::dropout<T>(x.data<T>(), o.data<T>(), mask ? mask->data<uint8_t>() : nullptr, x.numel, stream, threshold, T(a.kept()), c.stream);
  });
  return true;
}
bool dropoutGrad(DeviceOpContext& c) {
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  likeInput(c, "Out@GRAD", g, "X@GRAD", dx);
  DropoutAttrs a = dropoutAttrs(c);
  if (a.is_test) {
    byFloat(g, [&](auto tag) { using T = decltype(tag); cuda::affine<T>(g.data<T>(), dx.data<T>(), g.numel, T(a.test()), T(0), c.stream); });
    return true;
  }
  const DevTensor& m = in(c, "Mask");
  requireMask(c, m, "Out@GRAD", g);
  byFloat(g, [&](auto tag) {
    using T = decltype(tag);
    cuda::dropoutGrad<T>(m.data<uint8_t>(), g.data<T>(), dx.data<T>(), g.numel, T(a.kept()), c.stream);
  });
  return true;
}

}  // namespace

void registerPointwiseOps(DeviceOpTable& t) {
  t.emplace("relu", relu);
  t.emplace("relu_grad", reluGrad);
  t.emplace("gelu", gelu);
  t.emplace("gelu_grad", geluGrad);
  t.emplace("scale", scale);
  t.emplace("softmax", softmax);
  t.emplace("softmax_grad", softmaxGrad);
  t.emplace("dropout", dropout);
  t.emplace("dropout_grad", dropoutGrad);
}

}  // namespace spopt::rt::device_ops
