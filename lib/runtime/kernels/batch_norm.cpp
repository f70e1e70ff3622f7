// batch_norm and batch_norm_grad. X is viewed as [outer, C, inner]: NCHW (and [N, C]) puts the
// channel at axis 1, NHWC last. Training mode normalises with the batch's statistics (population
// variance, accumulated in double), updates the running ones in MeanOut / VarianceOut with
// `momentum` and saves the batch mean and the inverse standard deviation 1 / sqrt(var + eps) for
// the grad, as Paddle does; is_test (without trainable_statistics) or use_global_stats normalises
// with the running statistics and leaves them as they are.
#include <cmath>
#include <vector>

#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

struct BnShape {
  int64_t outer, c, inner;
  int64_t count() const { return outer * inner; }  // values per channel
};

BnShape bnShape(const KernelContext& c, const Tensor& x) {
  requireFloat(c, "X", x);
  const auto& s = x.shape();
  if (s.size() < 2) kernelFail(c, "X " + shapeStr(s) + " should have at least 2 dims");
  std::string layout = stringAttr(c, "data_layout", "NCHW");
  if (layout == "NHWC") return {product(s, 0, s.size() - 1), s.back(), 1};
  if (layout != "NCHW" && layout != "AnyLayout") kernelFail(c, "data_layout " + layout + " is neither NCHW nor NHWC");
  return {s[0], s[1], product(s, 2)};
}

bool globalStats(const KernelContext& c) {
  return (boolAttr(c, "is_test", false) && !boolAttr(c, "trainable_statistics", false)) || boolAttr(c, "use_global_stats", false);
}

const Tensor* perChannel(const KernelContext& c, std::string_view slot, int64_t n, bool required) {
  const Tensor* t = required ? &requireInput(c, slot) : optionalInput(c, slot);
  if (t && t->numel() != n)
    kernelFail(c, std::string(slot) + " " + shapeStr(t->shape()) + " should hold " + std::to_string(n) + " values (X's channels)");
  return t;
}
Tensor* perChannelOut(const KernelContext& c, std::string_view slot, int64_t n) {
  Tensor* t = optionalOutput(c, slot);
  if (t && (t->numel() != n || (t->storage() != Storage::F32 && t->storage() != Storage::F64)))
    kernelFail(c, std::string(slot) + " " + shapeStr(t->shape()) + " should hold " + std::to_string(n) + " floating values (X's channels)");
  return t;
}
void store(Tensor* t, int64_t i, double v) {
  if (!t) return;
  if (t->storage() == Storage::F32) t->data<float>()[i] = float(v);
  else t->data<double>()[i] = v;
}
double valueOr(const Tensor* t, int64_t i, double def) { return t ? scalarAt(*t, i) : def; }

// Sum over one channel of f(w, p) (lanes(w, ...) of values at p on: see laneSums), in double,
// in a fixed order: laneSum over each of the channel's `outer` runs, added in run order. The runs
// are summed four side by side (laneSums: the same bits), as one run's sum waits on the add latency.
template <typename F> double channelSum(const BnShape& s, int64_t ch, F&& f) {
  double acc = 0;
  int64_t o = 0;
  for (; o + 4 <= s.outer; o += 4) {
    int64_t base[4];
    for (int g = 0; g < 4; ++g) base[g] = ((o + g) * s.c + ch) * s.inner;
    double run[4];
    laneSums<4>(s.inner, [&](int g, int64_t i, auto w) { return f(w, base[g] + i); }, run);
    acc = (((acc + run[0]) + run[1]) + run[2]) + run[3];
  }
  for (; o < s.outer; ++o) {
    int64_t base = (o * s.c + ch) * s.inner;
    double run;
    laneSums<1>(s.inner, [&](int, int64_t i, auto w) { return f(w, base + i); }, &run);
    acc += run;
  }
  return acc;
}

// Asks for channel `ch`'s values of `p` (into L2) one cache line per call of line(k), k counting
// from 0: called once per line a channel's pass writes, the next channel arrives while this one
// is worked on from cache (its runs lie `c * inner` apart, where the hardware prefetcher loses
// the stream).
template <typename T> struct ChannelPrefetch {
  const BnShape& s;
  const T* p;
  int64_t ch;
  static constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  void line(int64_t k) const {
    if (ch >= s.c || s.inner == 0) return;
    const int64_t at = k * kLine, o = at / s.inner;
    if (o < s.outer) __builtin_prefetch(p + (o * s.c + ch) * s.inner + at % s.inner, 0, 2);
  }
};

// out[base + i] = op(base + i) over one channel's values, with `pf` asking for the next channel.
template <typename T, typename Op> void channelMap(const BnShape& s, int64_t ch, const ChannelPrefetch<T>* pf, int npf, Op&& op) {
  constexpr int64_t kLine = ChannelPrefetch<T>::kLine;
  int64_t line = 0;
  for (int64_t o = 0; o < s.outer; ++o) {
    const int64_t base = (o * s.c + ch) * s.inner;
    int64_t i = 0;
    for (; i + kLine <= s.inner; i += kLine, ++line) {
      for (int k = 0; k < npf; ++k) pf[k].line(line);
      for (int64_t j = 0; j < kLine; ++j) op(base + i + j);
    }
    for (; i < s.inner; ++i) op(base + i);
  }
}

void batchNorm(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  BnShape s = bnShape(c, x);
  const Tensor* scale = perChannel(c, "Scale", s.c, false);
  const Tensor* bias = perChannel(c, "Bias", s.c, false);
  const Tensor& mean = *perChannel(c, "Mean", s.c, true);
  const Tensor& var = *perChannel(c, "Variance", s.c, true);
  Tensor& y = requireOutput(c, "Y");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameShape(c, "Y", y, "X", x);
  Tensor* mean_out = perChannelOut(c, "MeanOut", s.c);
  Tensor* var_out = perChannelOut(c, "VarianceOut", s.c);
  Tensor* saved_mean = perChannelOut(c, "SavedMean", s.c);
  Tensor* saved_var = perChannelOut(c, "SavedVariance", s.c);
  double eps = floatAttr(c, "epsilon", 1e-5), momentum = floatAttr(c, "momentum", 0.9);
  bool global = globalStats(c);
  if (!global && s.count() == 0) kernelFail(c, "X " + shapeStr(x.shape()) + " holds no values to take statistics of");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t ch = 0; ch < s.c; ++ch) {
      double mu = scalarAt(mean, ch), variance = scalarAt(var, ch);
      if (!global) {
        mu = channelSum(s, ch, [&](auto w, int64_t i) { return lanes(w, xp + i); }) / double(s.count());
        variance = channelSum(s, ch, [&](auto w, int64_t i) {
                     auto d = lanes(w, xp + i) - mu;
                     return d * d;
                   }) / double(s.count());
      }
      double inv_std = 1.0 / std::sqrt(variance + eps);
      double a = valueOr(scale, ch, 1.0) * inv_std, b = valueOr(bias, ch, 0.0) - mu * a;
      const ChannelPrefetch<T> next{s, xp, ch + 1};
      channelMap(s, ch, &next, 1, [&](int64_t i) { yp[i] = T(double(xp[i]) * a + b); });
      double run_mean = scalarAt(mean, ch), run_var = scalarAt(var, ch);
      store(mean_out, ch, global ? run_mean : run_mean * momentum + mu * (1 - momentum));
      store(var_out, ch, global ? run_var : run_var * momentum + variance * (1 - momentum));
      store(saved_mean, ch, mu);
      store(saved_var, ch, inv_std);
    }
  });
}

// With xhat = (x - mean) * inv_std over the m values of a channel:
//   Bias@GRAD = sum dY,  Scale@GRAD = sum dY * xhat,
//   X@GRAD = scale * inv_std * (dY - Bias@GRAD / m - xhat * Scale@GRAD / m)   (batch statistics)
//   X@GRAD = scale * inv_std * dY                                             (global statistics)
void batchNormGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  BnShape s = bnShape(c, x);
  const Tensor& dy = requireInput(c, "Y@GRAD");
  requireSameStorage(c, "Y@GRAD", dy, "X", x);
  requireSameShape(c, "Y@GRAD", dy, "X", x);
  const Tensor* scale = perChannel(c, "Scale", s.c, false);
  bool global = globalStats(c);
  const Tensor& mean = *perChannel(c, global ? "Mean" : "SavedMean", s.c, true);
  const Tensor* var = global ? perChannel(c, "Variance", s.c, true) : nullptr;
  const Tensor& saved_inv_std = *perChannel(c, "SavedVariance", s.c, true);
  Tensor* dx = optionalOutput(c, "X@GRAD");
  if (dx) {
    requireSameStorage(c, "X@GRAD", *dx, "X", x);
    requireSameShape(c, "X@GRAD", *dx, "X", x);
  }
  Tensor* dscale = perChannelOut(c, "Scale@GRAD", s.c);
  Tensor* dbias = perChannelOut(c, "Bias@GRAD", s.c);
  double eps = floatAttr(c, "epsilon", 1e-5);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* g = dy.data<T>();
    double m = double(s.count());
    for (int64_t ch = 0; ch < s.c; ++ch) {
      double mu = scalarAt(mean, ch);
      double inv_std = global ? 1.0 / std::sqrt(scalarAt(*var, ch) + eps) : scalarAt(saved_inv_std, ch);
      double sum_g = channelSum(s, ch, [&](auto w, int64_t i) { return lanes(w, g + i); });
      double sum_gx = channelSum(s, ch, [&](auto w, int64_t i) { return lanes(w, g + i) * (lanes(w, xp + i) - mu) * inv_std; });
      store(dbias, ch, sum_g);
      store(dscale, ch, sum_gx);
      if (!dx) continue;
      double k = valueOr(scale, ch, 1.0) * inv_std;
      double mg = global || m == 0 ? 0.0 : sum_g / m, mgx = global || m == 0 ? 0.0 : sum_gx / m;
      T* d = dx->data<T>();
      const ChannelPrefetch<T> next[2] = {{s, xp, ch + 1}, {s, g, ch + 1}};
      channelMap(s, ch, next, 2, [&](int64_t i) {
        double xhat = (double(xp[i]) - mu) * inv_std;
        d[i] = T(k * (double(g[i]) - mg - xhat * mgx));
      });
    }
  });
}

}  // namespace

void registerBatchNormKernels(KernelTable& t) {
  t.add("batch_norm", batchNorm);
  t.add("batch_norm_grad", batchNormGrad);
}

}  // namespace spopt::rt
