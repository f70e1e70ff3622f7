// Pointwise activations (gelu, relu, sigmoid, hardsigmoid, hardswish, scale) and softmax, with
// their gradients.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/softmax_row.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// Out has X's shape and dtype; returns both tensors.
std::pair<const Tensor*, Tensor*> unary(KernelContext& c, std::string_view in_slot, std::string_view out_slot) {
  const Tensor& x = requireInput(c, in_slot);
  Tensor& out = requireOutput(c, out_slot);
  requireFloat(c, in_slot, x);
  requireSameStorage(c, out_slot, out, in_slot, x);
  requireSameShape(c, out_slot, out, in_slot, x);
  return {&x, &out};
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2*pi)
constexpr double kGeluCubic = 0.044715;

// gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), computed as 0.5 x erfc(-x / sqrt 2) so the
// lower tail keeps its relative accuracy (1 + erf cancels there); approximate: 0.5 x (1 + tanh(u)) with
// u = sqrt(2/pi)(x + 0.044715 x^3), computed as x * sigmoid(2u) (the same value, no cancellation).
// float32 uses the vectorisable functions of fast_math.h, float64 uses libm.
template <typename T> inline T geluValue(T v, bool approximate) {
  T u2 = T(2 * kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v);
  if constexpr (std::is_same_v<T, float>) {
    return approximate ? v * sigmoid(u2) : v * normalCdf(v);
  } else {
    return approximate ? v / (T(1) + std::exp(-u2)) : T(0.5) * v * std::erfc(-v * T(kInvSqrt2));
  }
}

// d gelu / dx: erf form Phi(x) + x phi(x); tanh form s + 2 x s (1 - s) u' with s = sigmoid(2u).
template <typename T> inline T geluSlope(T v, bool approximate) {
  if (approximate) {
    T u2 = T(2 * kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v);
    T s;
    if constexpr (std::is_same_v<T, float>) s = sigmoid(u2);
    else s = T(1) / (T(1) + std::exp(-u2));
    T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v * v);
    return s + T(2) * v * s * (T(1) - s) * du;
  }
  if constexpr (std::is_same_v<T, float>) {
    return normalCdf(v) + v * T(kInvSqrt2Pi) * fastExp(T(-0.5) * v * v);
  } else {
    return T(0.5) * std::erfc(-v * T(kInvSqrt2)) + v * T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
  }
}

void gelu(KernelContext& c) {
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  auto [x_slot, out_slot] = unary(c, "X", "Out");
  const Tensor* x = x_slot;
  Tensor* out = out_slot;
  bool approximate = boolAttr(c, "approximate", false);
  dispatchFloat(c, "X", *x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x->data<T>();
    T* o = out->data<T>();
    int64_t n = x->numel();
    if (approximate)
      for (int64_t i = 0; i < n; ++i) o[i] = geluValue(xp[i], true);
    else
      for (int64_t i = 0; i < n; ++i) o[i] = geluValue(xp[i], false);
  });
}

void geluGrad(KernelContext& c) {
  // The branch outside the loop: each form's loop vectorises on its own.
  if (boolAttr(c, "approximate", false)) pointwiseGrad(c, "X", [](auto x, auto g) { return g * geluSlope(x, true); });
  else pointwiseGrad(c, "X", [](auto x, auto g) { return g * geluSlope(x, false); });
}

// Paddle's relu_grad reads Out: dX = dOut where Out > 0.
void reluGrad(KernelContext& c) {
  pointwiseGrad(c, "Out", [](auto out, auto g) { return out > decltype(out)(0) ? g : decltype(g)(0); });
}

// Out[i] = f(X[i]) for a float X: the loop per dtype, so each vectorises on its own.
template <typename F> void mapUnary(KernelContext& c, F f) {
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  auto [x_slot, out_slot] = unary(c, "X", "Out");
  const Tensor* x = x_slot;
  Tensor* out = out_slot;
  dispatchFloat(c, "X", *x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x->data<T>();
    T* o = out->data<T>();
    for (int64_t i = 0, n = x->numel(); i < n; ++i) o[i] = f(xp[i]);
  });
}

void relu(KernelContext& c) {
  mapUnary(c, [](auto v) { return v > decltype(v)(0) ? v : decltype(v)(0); });
}

// sigmoid = 1 / (1 + e^-x): fastExp for float32 (as gelu), libm for float64.
void sigmoidKernel(KernelContext& c) {
  mapUnary(c, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float>) return sigmoid(v);
    else return T(1) / (T(1) + std::exp(-v));
  });
}
// Paddle's sigmoid_grad reads Out: dX = dOut * Out * (1 - Out).
void sigmoidGrad(KernelContext& c) {
  pointwiseGrad(c, "Out", [](auto out, auto g) { return g * out * (decltype(out)(1) - out); });
}

// The comparisons are written so that a NaN falls through both and stays NaN (Eigen's
// cwiseMax / cwiseMin in Paddle keep it too); as selects, the loops vectorise.
template <typename T> inline T clampTo(T v, T lo, T hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// hardsigmoid = clamp(slope * x + offset, 0, 1); Paddle's defaults slope 0.2, offset 0.5.
struct HardSigmoid {
  double slope, offset;
  explicit HardSigmoid(const KernelContext& c) : slope(floatAttr(c, "slope", 0.2)), offset(floatAttr(c, "offset", 0.5)) {}
};
void hardsigmoid(KernelContext& c) {
  HardSigmoid a(c);
  mapUnary(c, [a](auto v) {
    using T = decltype(v);
    return clampTo(T(a.slope) * v + T(a.offset), T(0), T(1));
  });
}
// Reads Out (Paddle's kDepOut): dX = dOut * slope where 0 < Out < 1, else 0.
void hardsigmoidGrad(KernelContext& c) {
  HardSigmoid a(c);
  pointwiseGrad(c, "Out", [a](auto out, auto g) {
    using T = decltype(out);
    // The window as a 0 / 1 factor: the && or nested selects kept the loop scalar.
    const T inside = T(out > T(0)) * T(out < T(1));
    return g * (inside * T(a.slope));
  });
}

// hardswish = x * clamp(x + offset, 0, threshold) / scale; legacy hard_swish's attributes,
// Paddle's fixed 6 / 6 / 3 where absent (PIR's op has none).
struct HardSwish {
  double threshold, scale, offset;
  explicit HardSwish(const KernelContext& c)
      : threshold(floatAttr(c, "threshold", 6.0)), scale(floatAttr(c, "scale", 6.0)), offset(floatAttr(c, "offset", 3.0)) {
    if (scale == 0) kernelFail(c, "scale 0 would divide by zero");
  }
};
void hardswish(KernelContext& c) {
  HardSwish a(c);
  mapUnary(c, [a](auto v) {
    using T = decltype(v);
    return clampTo(v + T(a.offset), T(0), T(a.threshold)) * v / T(a.scale);
  });
}
// dX = dOut * ((2x + offset) / scale inside the ramp, 0 below it, 1 above it) as Paddle's functor.
void hardswishGrad(KernelContext& c) {
  HardSwish a(c);
  pointwiseGrad(c, "X", [a](auto x, auto g) {
    using T = decltype(x);
    // The quotient taken everywhere and then selected: a division under a branch kept the loop scalar.
    const T shifted = x + T(a.offset), slope = (T(2) * x + T(a.offset)) / T(a.scale);
    const T ramp = shifted > T(0) ? slope : T(0);
    return g * (shifted < T(a.threshold) ? ramp : T(1));
  });
}

// scale: Out = scale * X + bias, or scale * (X + bias) when bias_after_scale is false. A ScaleTensor
// input, when present, overrides the scale attribute (as in Paddle).
void scale(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "X", x);
  requireSameShape(c, "Out", out, "X", x);
  double s = floatAttr(c, "scale", 1.0);
  if (const Tensor* st = optionalInput(c, "ScaleTensor")) {
    if (st->numel() != 1) kernelFail(c, "ScaleTensor " + shapeStr(st->shape()) + " should hold one element");
    s = scalarAt(*st);
  }
  double b = floatAttr(c, "bias", 0.0);
  bool after = boolAttr(c, "bias_after_scale", true);
  int64_t n = x.numel();
  if (x.storage() == Storage::I64) {
    const int64_t* xp = x.data<int64_t>();
    int64_t* o = out.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      o[i] = int64_t(after ? s * double(xp[i]) + b : s * (double(xp[i]) + b));
    return;
  }
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    T ts = T(s), tb = after ? T(b) : T(s * b);  // scale * (x + bias) = scale * x + scale * bias
    for (int64_t i = 0; i < n; ++i) o[i] = ts * xp[i] + tb;
  });
}

// Views a tensor as [outer, len, inner] around `axis`.
struct AxisView {
  int64_t outer, len, inner;
};
AxisView axisView(const KernelContext& c, const std::vector<int64_t>& shape, int64_t axis_attr) {
  if (shape.empty()) return {1, 1, 1};
  int64_t a = normaliseAxis(c, axis_attr, shape.size(), "axis");
  return {product(shape, 0, size_t(a)), shape[size_t(a)], product(shape, size_t(a) + 1)};
}

// softmax along `axis` (default -1): max-shifted exponentials (fastExp for float32), the
// denominator summed in the tensor's type as Paddle does (softmax_row.h).
void softmax(KernelContext& c) {
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  auto [x_slot, out_slot] = unary(c, "X", "Out");
  const Tensor* x = x_slot;
  Tensor* out = out_slot;
  AxisView v = axisView(c, x->shape(), intAttr(c, "axis", -1));
  dispatchFloat(c, "X", *x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x->data<T>();
    T* o = out->data<T>();
    if (v.len == 0) return;
    if (v.inner == 1) return softmaxRows<T>(xp, o, v.len, v.outer, nullptr);
    for (int64_t a = 0; a < v.outer; ++a)
      for (int64_t b = 0; b < v.inner; ++b) {
        int64_t base = a * v.len * v.inner + b;
        if (v.inner == 1) softmaxRow<T, true>(xp + base, o + base, v.len, 1);
        else softmaxRow<T, false>(xp + base, o + base, v.len, v.inner);
      }
  });
}

template <typename T, bool Contiguous>
void softmaxGradRow(const T* o, const T* gp, T* d, int64_t len, int64_t stride) {
  const int64_t st = Contiguous ? 1 : stride;
  double dot = laneSum(len, [&](int64_t k) { return double(o[k * st]) * double(gp[k * st]); });
  for (int64_t k = 0; k < len; ++k) d[k * st] = T(double(o[k * st]) * (double(gp[k * st]) - dot));
}

// softmax_grad: dX = Out * (dOut - sum_axis(dOut * Out)).
void softmaxGrad(KernelContext& c) {
  const Tensor& out = requireInput(c, "Out");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireFloat(c, "Out", out);
  requireSameStorage(c, "Out@GRAD", g, "Out", out);
  requireSameShape(c, "Out@GRAD", g, "Out", out);
  requireSameStorage(c, "X@GRAD", dx, "Out", out);
  requireSameShape(c, "X@GRAD", dx, "Out", out);
  AxisView v = axisView(c, out.shape(), intAttr(c, "axis", -1));
  dispatchFloat(c, "Out", out, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t a = 0; a < v.outer; ++a)
      for (int64_t b = 0; b < v.inner; ++b) {
        int64_t base = a * v.len * v.inner + b;
        const T* o = out.data<T>() + base;
        const T* gp = g.data<T>() + base;
        T* d = dx.data<T>() + base;
        if (v.inner == 1) softmaxGradRow<T, true>(o, gp, d, v.len, 1);
        else softmaxGradRow<T, false>(o, gp, d, v.len, v.inner);
      }
  });
}

}  // namespace

void registerActivationKernels(KernelTable& t) {
  t.add("gelu", gelu);
  t.add("gelu_grad", geluGrad);
  t.add("relu", relu);
  t.add("relu_grad", reluGrad);
  t.add("scale", scale);
  t.add("sigmoid", sigmoidKernel);
  t.add("sigmoid_grad", sigmoidGrad);
  t.add("hardsigmoid", hardsigmoid);
  t.add("hardsigmoid_grad", hardsigmoidGrad);
  t.add("hardswish", hardswish);
  t.add("hardswish_grad", hardswishGrad);
  t.add("softmax", softmax);
  t.add("softmax_grad", softmaxGrad);
}

}  // namespace spopt::rt
