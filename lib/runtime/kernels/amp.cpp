// Mixed precision and gradient clipping (ops/amp_ops.cpp): cast, check_finite_and_unscale,
// update_loss_scaling, squared_l2_norm (+ grad), sqrt (+ grad), clip_by_norm. They compute in the
// storage type (float32 for float16 / bfloat16 vars) with sums in double; the executor rounds what
// a half var stores (runtime/half.h), so a cast to bfloat16 is that rounding.
#include <cmath>

#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// Element i of any storage set from a double as Paddle's static_cast would (floats to integers
// truncate toward zero; anything non-zero, NaN included, is true).
void setValue(Tensor& t, int64_t i, double v, DType dtype) {
  switch (t.storage()) {
    case Storage::F32: t.data<float>()[i] = float(v); return;
    case Storage::F64: t.data<double>()[i] = v; return;
    case Storage::I64: t.data<int64_t>()[i] = std::isfinite(v) ? int64_t(v) : 0; return;
    case Storage::U8: t.data<uint8_t>()[i] = dtype == DType::Bool ? uint8_t(v != 0) : uint8_t(std::isfinite(v) ? int64_t(v) : 0); return;
  }
}

void castKernel(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireShape(c, "Out", out, x.shape(), "X's shape");
  if (x.storage() == out.storage()) {
    copyTensor(c, x, "X", out, "Out");
    if (out.dtype() == DType::Bool)  // an integer 2 cast to bool is 1
      for (int64_t i = 0; i < out.numel(); ++i) out.data<uint8_t>()[i] = out.data<uint8_t>()[i] != 0;
    return;
  }
  for (int64_t i = 0; i < x.numel(); ++i) setValue(out, i, x.valueAt(i), out.dtype());
}

// Paddle's CPU kernel: inverse = 1 / Scale in the compute type, Out = X * inverse for every X
// (also when some X is not finite: update_loss_scaling zeroes them then).
void checkFiniteAndUnscale(KernelContext& c) {
  const Tensor& scale = requireInput(c, "Scale");
  Tensor& found = requireOutput(c, "FoundInfinite");
  size_t n = c.io.inputCount("X");
  if (c.io.outputCount("Out") != n)
    kernelFail(c, "has " + std::to_string(c.io.outputCount("Out")) + " Out for " + std::to_string(n) + " X");
  if (scale.numel() != 1) kernelFail(c, "Scale " + shapeStr(scale.shape()) + " should hold one element");
  if (found.numel() != 1) kernelFail(c, "FoundInfinite " + shapeStr(found.shape()) + " should hold one element");
  bool any = false;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& x = requireInput(c, "X", k);
    Tensor& out = requireOutput(c, "Out", k);
    requireSameShape(c, "Out", out, "X", x);
    requireSameStorage(c, "Out", out, "X", x);
    dispatchFloat(c, "X", x, [&](auto tag) {
      using T = decltype(tag);
      const T inverse = T(1) / T(scale.valueAt(0));
      const T* xp = x.data<T>();
      T* op = out.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        any = any || !std::isfinite(xp[i]);
        op[i] = xp[i] * inverse;
      }
    });
  }
  setValue(found, 0, any ? 1 : 0, found.dtype());
}

// Paddle's update_loss_scaling: with FoundInfinite every Out is zeroed; unless stop_update, the
// good / bad step counters advance and the scale is multiplied by incr_ratio after
// incr_every_n_steps good steps in a row (kept when that overflows) or by decr_ratio after
// decr_every_n_nan_or_inf bad ones (never below 1).
void updateLossScaling(KernelContext& c) {
  const Tensor& found_t = requireInput(c, "FoundInfinite");
  const Tensor& prev = requireInput(c, "PrevLossScaling");
  const Tensor& good_in = requireInput(c, "InGoodSteps");
  const Tensor& bad_in = requireInput(c, "InBadSteps");
  Tensor& scale_out = requireOutput(c, "LossScaling");
  Tensor& good_out = requireOutput(c, "OutGoodSteps");
  Tensor& bad_out = requireOutput(c, "OutBadSteps");
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"FoundInfinite", &found_t}, {"PrevLossScaling", &prev},
                                {"InGoodSteps", &good_in}, {"InBadSteps", &bad_in}, {"LossScaling", &scale_out},
                                {"OutGoodSteps", &good_out}, {"OutBadSteps", &bad_out}})
    if (t->numel() != 1) kernelFail(c, std::string(name) + " " + shapeStr(t->shape()) + " should hold one element");
  requireSameStorage(c, "LossScaling", scale_out, "PrevLossScaling", prev);
  const bool found = found_t.valueAt(0) != 0;
  size_t n = c.io.inputCount("X");
  if (c.io.outputCount("Out") != n)
    kernelFail(c, "has " + std::to_string(c.io.outputCount("Out")) + " Out for " + std::to_string(n) + " X");
  for (size_t k = 0; k < n; ++k) {
    const Tensor& x = requireInput(c, "X", k);
    Tensor& out = requireOutput(c, "Out", k);
    requireSameShape(c, "Out", out, "X", x);
    requireSameStorage(c, "Out", out, "X", x);
    if (!found) copyTensor(c, x, "X", out, "Out");  // else it stays the executor's zeros
  }
  bool stop = boolAttr(c, "stop_update", false);
  if (const Tensor* s = optionalInput(c, "StopUpdate")) stop = s->numel() > 0 && s->valueAt(0) != 0;
  int64_t good = int64_t(good_in.valueAt(0)), bad = int64_t(bad_in.valueAt(0));
  dispatchFloat(c, "PrevLossScaling", prev, [&](auto tag) {
    using T = decltype(tag);
    T scale = prev.data<T>()[0];
    if (!stop) {
      if (found) {
        good = 0;
        if (++bad == intAttr(c, "decr_every_n_nan_or_inf", 2)) {
          T next = scale * T(float(floatAttr(c, "decr_ratio", 0.8)));
          scale = next < T(1) ? T(1) : next;
          bad = 0;
        }
      } else {
        bad = 0;
        if (++good == intAttr(c, "incr_every_n_steps", 1000)) {
          T next = scale * T(float(floatAttr(c, "incr_ratio", 2.0)));
          scale = std::isfinite(next) ? next : scale;
          good = 0;
        }
      }
    }
    scale_out.data<T>()[0] = scale;
  });
  setValue(good_out, 0, double(good), good_out.dtype());
  setValue(bad_out, 0, double(bad), bad_out.dtype());
}

template <typename T> double sumSquares(const T* p, int64_t n) {
  return laneSum(n, [&](int64_t i) { return double(p[i]) * double(p[i]); });
}

void squaredL2Norm(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "X", x);
  if (out.numel() != 1) kernelFail(c, "Out " + shapeStr(out.shape()) + " should hold one element");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    out.data<T>()[0] = T(sumSquares(x.data<T>(), x.numel()));
  });
}

// dX = 2 X dOut.
void squaredL2NormGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireSameShape(c, "X@GRAD", dx, "X", x);
  requireSameStorage(c, "X@GRAD", dx, "X", x);
  if (g.numel() != 1) kernelFail(c, "Out@GRAD " + shapeStr(g.shape()) + " should hold one element");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T two_g = T(2) * T(g.valueAt(0));
    const T* xp = x.data<T>();
    T* d = dx.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) d[i] = two_g * xp[i];
  });
}

void sqrtKernel(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameShape(c, "Out", out, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = std::sqrt(xp[i]);
  });
}

// dX = dOut * 0.5 / Out (Paddle reads Out, not X).
void sqrtGrad(KernelContext& c) {
  pointwiseGrad(c, "Out", [](auto out, auto g) { return g * decltype(out)(0.5) / out; });
}

// Out = X * (max_norm / ||X||) when ||X|| > max_norm, else X; the norm is summed in double.
void clipByNorm(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameShape(c, "Out", out, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  const double max_norm = floatAttr(c, "max_norm", 1.0);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    const double norm = std::sqrt(sumSquares(xp, x.numel()));
    const T scale = norm > max_norm ? T(max_norm / norm) : T(1);
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = xp[i] * scale;
  });
}

}  // namespace

void registerAmpKernels(KernelTable& t) {
  t.add("cast", castKernel);
  t.add("check_finite_and_unscale", checkFiniteAndUnscale);
  t.add("update_loss_scaling", updateLossScaling);
  t.add("squared_l2_norm", squaredL2Norm);
  t.add("squared_l2_norm_grad", squaredL2NormGrad);
  t.add("sqrt", sqrtKernel);
  t.add("sqrt_grad", sqrtGrad);
  t.add("clip_by_norm", clipByNorm);
}

}  // namespace spopt::rt
