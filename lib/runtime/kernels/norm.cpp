// layer_norm and layer_norm_grad. X is viewed as [rows, cols] split at begin_norm_axis; each row
// is normalised with its population mean and variance (accumulated in X's type, as Paddle does).
// Mean and Variance hold one value per row (declared as [rows] or as X's leading dims, and may be
// float32 while X is float64, as Paddle does for low precision); Scale and Bias hold `cols` values
// and are optional.
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/kernels/float_sum.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

struct NormShape {
  int64_t rows, cols;
};

NormShape normShape(const KernelContext& c, const Tensor& x) {
  int64_t axis = intAttr(c, "begin_norm_axis", 1);
  int64_t rank = int64_t(x.shape().size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank || rank == 0)
    kernelFail(c, "begin_norm_axis " + std::to_string(intAttr(c, "begin_norm_axis", 1)) +
                      " is out of range for X " + shapeStr(x.shape()));
  return {product(x.shape(), 0, size_t(axis)), product(x.shape(), size_t(axis))};
}

void requireCount(const KernelContext& c, std::string_view name, const Tensor* t, int64_t n, std::string_view what) {
  if (!t) return;
  requireFloat(c, name, *t);
  if (t->numel() != n)
    kernelFail(c, std::string(name) + " " + shapeStr(t->shape()) + " should hold " + std::to_string(n) + " values (" +
                      std::string(what) + ")");
}

void storeValue(Tensor& t, int64_t i, double v) {
  if (t.storage() == Storage::F32) t.data<float>()[i] = float(v);
  else t.data<double>()[i] = v;
}

// A Scale/Bias vector of `cols` values as T (its own storage may differ from X's), or `fill`.
template <typename T> std::vector<T> paramVector(const Tensor* t, int64_t cols, T fill) {
  std::vector<T> v(size_t(cols), fill);
  if (t)
    for (int64_t i = 0; i < cols; ++i) v[size_t(i)] = T(scalarAt(*t, i));
  return v;
}

struct RowStats {
  double mean, variance;
};

// A row's population mean and variance, two passes (no cancellation from E[x^2] - E[x]^2).
// float32 sums in float32 lanes, as Paddle's CPU kernel does (its jit LayerNorm adds into float
// vectors; the statistics in double made the kernel twice the memory bound's time); float64 in
// laneSum.
RowStats rowStats(const double* x, int64_t n) {
  const double mu = laneSum(n, [&](int64_t j) { return x[j]; }) / double(n);
  const double variance = laneSum(n, [&](int64_t j) {
                            const double d = x[j] - mu;
                            return d * d;
                          }) / double(n);
  return {mu, variance};
}
RowStats rowStats(const float* x, int64_t n) {
  auto at16 = [&](int64_t j) {
    Floats16 v;
    std::memcpy(&v, x + j, sizeof v);
    return v;
  };
  const float mu = sumFloat32(n, at16, [&](int64_t j) { return x[j]; }) / float(n);
  const float variance = sumFloat32(
                             n,
                             [&](int64_t j) {
                               const Floats16 d = at16(j) - mu;
                               return d * d;
                             },
                             [&](int64_t j) {
                               const float d = x[j] - mu;
                               return d * d;
                             }) /
                         float(n);
  return {mu, variance};
}

void layerNorm(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor* scale = optionalInput(c, "Scale");
  const Tensor* bias = optionalInput(c, "Bias");
  Tensor& y = requireOutput(c, "Y");
  Tensor* mean = optionalOutput(c, "Mean");
  Tensor* var = optionalOutput(c, "Variance");
  requireFloat(c, "X", x);
  requireSameStorage(c, "Y", y, "X", x);
  requireSameShape(c, "Y", y, "X", x);
  NormShape s = normShape(c, x);
  requireCount(c, "Scale", scale, s.cols, "the normalised dims of X");
  requireCount(c, "Bias", bias, s.cols, "the normalised dims of X");
  requireCount(c, "Mean", mean, s.rows, "the leading dims of X");
  requireCount(c, "Variance", var, s.rows, "the leading dims of X");
  double eps = floatAttr(c, "epsilon", 1e-5);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> g = paramVector<T>(scale, s.cols, T(1));
    std::vector<T> b = paramVector<T>(bias, s.cols, T(0));
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data<T>() + r * s.cols;
      T* yr = y.data<T>() + r * s.cols;
      const auto [mu, variance] = rowStats(xr, s.cols);
      const T tm = T(mu), tr = T(1.0 / std::sqrt(variance + eps));
      for (int64_t j = 0; j < s.cols; ++j) yr[j] = (xr[j] - tm) * tr * g[size_t(j)] + b[size_t(j)];
      if (mean) storeValue(*mean, r, mu);
      if (var) storeValue(*var, r, variance);
    }
  });
}

// With xhat = (x - mean) * rstd and dxhat = dY * scale, per row of n values:
//   dX = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   dScale = sum over rows of dY * xhat,  dBias = sum over rows of dY.
void layerNormGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor* scale = optionalInput(c, "Scale");
  const Tensor& mean = requireInput(c, "Mean");
  const Tensor& var = requireInput(c, "Variance");
  const Tensor& dy = requireInput(c, "Y@GRAD");
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dscale = optionalOutput(c, "Scale@GRAD");
  Tensor* dbias = optionalOutput(c, "Bias@GRAD");
  requireFloat(c, "X", x);
  requireSameStorage(c, "Y@GRAD", dy, "X", x);
  requireSameShape(c, "Y@GRAD", dy, "X", x);
  NormShape s = normShape(c, x);
  requireCount(c, "Scale", scale, s.cols, "the normalised dims of X");
  requireCount(c, "Mean", &mean, s.rows, "the leading dims of X");
  requireCount(c, "Variance", &var, s.rows, "the leading dims of X");
  if (dx) {
    requireSameStorage(c, "X@GRAD", *dx, "X", x);
    requireSameShape(c, "X@GRAD", *dx, "X", x);
  }
  requireCount(c, "Scale@GRAD", dscale, s.cols, "the normalised dims of X");
  requireCount(c, "Bias@GRAD", dbias, s.cols, "the normalised dims of X");
  double eps = floatAttr(c, "epsilon", 1e-5);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> g = paramVector<double>(scale, s.cols, 1.0);
    std::vector<double> acc_scale(size_t(dscale ? s.cols : 0), 0.0), acc_bias(size_t(dbias ? s.cols : 0), 0.0);
    std::vector<double> xhat(size_t(s.cols)), dxhat(size_t(s.cols));
    double inv_n = 1.0 / double(s.cols);
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data<T>() + r * s.cols;
      const T* dyr = dy.data<T>() + r * s.cols;
      double mu = scalarAt(mean, r);
      double rstd = 1.0 / std::sqrt(scalarAt(var, r) + eps);
      double* xh = xhat.data();
      double* dxh = dxhat.data();
      for (int64_t j = 0; j < s.cols; ++j) {
        xh[j] = (double(xr[j]) - mu) * rstd;
        dxh[j] = double(dyr[j]) * g[size_t(j)];
      }
      double sum_d = laneSum(s.cols, [&](int64_t j) { return dxh[j]; });
      double sum_dx = laneSum(s.cols, [&](int64_t j) { return dxh[j] * xh[j]; });
      if (dx) {
        T* d = dx->data<T>() + r * s.cols;
        double md = sum_d * inv_n, mdx = sum_dx * inv_n;
        for (int64_t j = 0; j < s.cols; ++j) {
          size_t k = size_t(j);
          d[j] = T(rstd * (dxhat[k] - md - xhat[k] * mdx));
        }
      }
      if (dscale)
        for (int64_t j = 0; j < s.cols; ++j) acc_scale[size_t(j)] += double(dyr[j]) * xhat[size_t(j)];
      if (dbias)
        for (int64_t j = 0; j < s.cols; ++j) acc_bias[size_t(j)] += double(dyr[j]);
    }
    for (int64_t j = 0; j < s.cols; ++j) {
      if (dscale) storeValue(*dscale, j, acc_scale[size_t(j)]);
      if (dbias) storeValue(*dbias, j, acc_bias[size_t(j)]);
    }
  });
}

}  // namespace

void registerNormKernels(KernelTable& t) {
  t.add("layer_norm", layerNorm);
  t.add("layer_norm_grad", layerNormGrad);
}

}  // namespace spopt::rt
