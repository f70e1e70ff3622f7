#include "runtime/nccl/device_ops.h"

#include <cmath>
#include <optional>
#include <unordered_map>

#include "runtime/inputs.h"
#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/dropout_hash.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/matmul_plan.h"
#include "runtime/nccl/device_kernels.h"

namespace spopt::rt {
namespace {

using Dims = std::vector<int64_t>;

const DevTensor& in(DeviceOpContext& c, std::string_view slot, size_t i = 0) {
  const DevTensor* t = c.io.input(slot, i);
  if (!t) kernelFail(c.host, "missing input " + std::string(slot));
  return *t;
}
DevTensor& out(DeviceOpContext& c, std::string_view slot, size_t i = 0) {
  DevTensor* t = c.io.output(slot, i);
  if (!t) kernelFail(c.host, "missing output " + std::string(slot));
  return *t;
}

void sameShape(DeviceOpContext& c, std::string_view a_name, const DevTensor& a, std::string_view b_name, const DevTensor& b) {
  if (a.shape != b.shape)
    kernelFail(c.host, std::string(a_name) + " " + shapeStr(a.shape) + " differs from " + std::string(b_name) + " " + shapeStr(b.shape));
}
void sameStorage(DeviceOpContext& c, std::string_view a_name, const DevTensor& a, std::string_view b_name, const DevTensor& b) {
  if (a.storage() != b.storage())
    kernelFail(c.host, std::string(a_name) + " is " + std::string(dtypeName(a.dtype)) + " but " + std::string(b_name) + " is " +
                           std::string(dtypeName(b.dtype)));
}
bool isFloat(const DevTensor& t) { return t.storage() == Storage::F32 || t.storage() == Storage::F64; }
void requireFloatDev(DeviceOpContext& c, std::string_view name, const DevTensor& t) {
  if (!isFloat(t)) kernelFail(c.host, std::string(name) + " is " + std::string(dtypeName(t.dtype)) + ", not a floating dtype");
}
// Out like X: same storage and shape, floating.
void likeInput(DeviceOpContext& c, std::string_view xn, const DevTensor& x, std::string_view on, const DevTensor& o) {
  requireFloatDev(c, xn, x);
  sameStorage(c, on, o, xn, x);
  sameShape(c, on, o, xn, x);
}

template <typename F> void byFloat(const DevTensor& t, F&& f) {
  if (t.storage() == Storage::F64) f(double{});
  else f(float{});
}

void copyDev(DeviceOpContext& c, const DevTensor& from, DevTensor& to) {
  if (from.bytes() != to.bytes()) kernelFail(c.host, "copy between tensors of different sizes");
  if (from.bytes() && from.buf != to.buf)
    cudaCheck(cudaMemcpyAsync(to.buf.get(), from.buf.get(), from.bytes(), cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpyAsync");
}

void blasCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw DeviceError(std::string(what) + " failed: cuBLAS status " + std::to_string(int(s)));
}

// ---- matmul through cuBLAS (row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T) ----

template <typename T>
void deviceGemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                int64_t ldb, T beta, T* cc, int64_t ldc) {
  const T one = T(1);
  cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if constexpr (std::is_same_v<T, float>)
    blasCheck(cublasSgemm(h, ob, oa, int(n), int(m), int(k), &one, b, int(ldb), a, int(lda), &beta, cc, int(ldc)), "cublasSgemm");
  else
    blasCheck(cublasDgemm(h, ob, oa, int(n), int(m), int(k), &one, b, int(ldb), a, int(lda), &beta, cc, int(ldc)), "cublasDgemm");
}

// Equal batch dims on all three operands: one strided-batched call; otherwise the shared plan.
template <typename T>
void broadcastGemmDev(DeviceOpContext& c, const T* a, const Dims& as, bool ta, const T* b, const Dims& bs, bool tb, T* cc,
                      const Dims& cs) {
  using matmul_plan::batchOf;
  Dims ab = batchOf(as), bb = batchOf(bs), cb = batchOf(cs);
  int64_t batch = product(cb);
  int64_t m = cs[cs.size() - 2], n = cs.back(), k = ta ? as[as.size() - 2] : as.back();
  if (ab == bb && bb == cb && batch > 1 && k > 0 && m * n > 0) {
    const T one = T(1), zero = T(0);
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    long long sa = as[as.size() - 2] * as.back(), sb = bs[bs.size() - 2] * bs.back(), sc = m * n;
    if constexpr (std::is_same_v<T, float>)
      blasCheck(cublasSgemmStridedBatched(c.blas, ob, oa, int(n), int(m), int(k), &one, b, int(bs.back()), sb, a, int(as.back()), sa,
                                          &zero, cc, int(n), sc, int(batch)),
                "cublasSgemmStridedBatched");
    else
      blasCheck(cublasDgemmStridedBatched(c.blas, ob, oa, int(n), int(m), int(k), &one, b, int(bs.back()), sb, a, int(as.back()), sa,
                                          &zero, cc, int(n), sc, int(batch)),
                "cublasDgemmStridedBatched");
    return;
  }
  matmul_plan::broadcastGemm(
      a, as, ta, b, bs, tb, cc, cs,
      [&](bool ta_, bool tb_, int64_t m_, int64_t n_, int64_t k_, const T* a_, int64_t lda, const T* b_, int64_t ldb, T beta, T* c_,
          int64_t ldc) { deviceGemm<T>(c.blas, ta_, tb_, m_, n_, k_, a_, lda, b_, ldb, beta, c_, ldc); },
      [&](T* c_, int64_t count) { cudaCheck(cudaMemsetAsync(c_, 0, size_t(count) * sizeof(T), c.stream), "cudaMemsetAsync"); });
}

void requireMatmulOut(DeviceOpContext& c, std::string_view name, const DevTensor& t, const Dims& expected) {
  if (expected.empty() && t.shape == Dims{1}) return;
  if (t.shape != expected)
    kernelFail(c.host, std::string(name) + " " + shapeStr(t.shape) + " differs from " + shapeStr(expected) + " (matmul of X and Y)");
}

bool matmulV2(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor& y = in(c, "Y");
  DevTensor& o = out(c, "Out");
  requireFloatDev(c, "X", x);
  sameStorage(c, "Y", y, "X", x);
  sameStorage(c, "Out", o, "X", x);
  auto s = matmul_plan::matmulShapes(c.host, x.shape, y.shape);
  requireMatmulOut(c, "Out", o, s.out);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    broadcastGemmDev<T>(c, x.data<T>(), s.x, s.tx, y.data<T>(), s.y, s.ty, o.data<T>(), s.out_logical);
  });
  return true;
}

// The same four products as the CPU kernel (matmul.cpp).
bool matmulV2Grad(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor& y = in(c, "Y");
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor* dx = c.io.output("X@GRAD");
  DevTensor* dy = c.io.output("Y@GRAD");
  requireFloatDev(c, "X", x);
  sameStorage(c, "Y", y, "X", x);
  sameStorage(c, "Out@GRAD", g, "X", x);
  auto s = matmul_plan::matmulShapes(c.host, x.shape, y.shape);
  requireMatmulOut(c, "Out@GRAD", g, s.out);
  if (dx) sameStorage(c, "X@GRAD", *dx, "X", x), sameShape(c, "X@GRAD", *dx, "X", x);
  if (dy) sameStorage(c, "Y@GRAD", *dy, "Y", y), sameShape(c, "Y@GRAD", *dy, "Y", y);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    if (dx) {
      if (!s.tx) broadcastGemmDev<T>(c, gp, s.out_logical, false, y.data<T>(), s.y, !s.ty, dx->data<T>(), s.x);
      else broadcastGemmDev<T>(c, y.data<T>(), s.y, s.ty, gp, s.out_logical, true, dx->data<T>(), s.x);
    }
    if (dy) {
      if (!s.ty) broadcastGemmDev<T>(c, x.data<T>(), s.x, !s.tx, gp, s.out_logical, false, dy->data<T>(), s.y);
      else broadcastGemmDev<T>(c, gp, s.out_logical, true, x.data<T>(), s.x, s.tx, dy->data<T>(), s.y);
    }
  });
  return true;
}

// ---- elementwise with Paddle broadcasting ----

cuda::BroadcastDims toDims(DeviceOpContext& c, const BroadcastPlan& p) {
  cuda::BroadcastDims d;
  if (p.sizes.size() > size_t(cuda::kMaxDims)) kernelFail(c.host, "broadcast over more than 8 collapsed dims");
  d.rank = int(p.sizes.size());
  for (size_t i = 0; i < p.sizes.size(); ++i) d.sizes[i] = p.sizes[i], d.x_strides[i] = p.x_strides[i], d.y_strides[i] = p.y_strides[i];
  return d;
}

template <cuda::Binary K> bool binaryForward(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor& y = in(c, "Y");
  DevTensor& o = out(c, "Out");
  requireFloatDev(c, "X", x);
  sameStorage(c, "Y", y, "X", x);
  sameStorage(c, "Out", o, "X", x);
  BroadcastPlan p = planBroadcast(c.host, x.shape, y.shape, intAttr(c.host, "axis", -1));
  if (o.shape != p.out_shape) kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(p.out_shape) + " (X and Y broadcast)");
  cuda::BroadcastDims d = toDims(c, p);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    cuda::binary<T>(K, x.data<T>(), y.data<T>(), o.data<T>(), d, o.numel, c.stream);
  });
  return true;
}

template <cuda::Binary K> bool binaryBackward(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor& y = in(c, "Y");
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor* dx = c.io.output("X@GRAD");
  DevTensor* dy = c.io.output("Y@GRAD");
  requireFloatDev(c, "X", x);
  sameStorage(c, "Y", y, "X", x);
  sameStorage(c, "Out@GRAD", g, "X", x);
  BroadcastPlan p = planBroadcast(c.host, x.shape, y.shape, intAttr(c.host, "axis", -1));
  if (g.shape != p.out_shape) kernelFail(c.host, "Out@GRAD " + shapeStr(g.shape) + " differs from " + shapeStr(p.out_shape));
  if (dx) sameStorage(c, "X@GRAD", *dx, "X", x), sameShape(c, "X@GRAD", *dx, "X", x);
  if (dy) sameStorage(c, "Y@GRAD", *dy, "Y", y), sameShape(c, "Y@GRAD", *dy, "Y", y);
  cuda::BroadcastDims d = toDims(c, p);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    if (dx) cuda::binaryGrad<T>(K, true, g.data<T>(), y.data<T>(), dx->data<T>(), dx->numel, d, c.stream);
    if (dy) cuda::binaryGrad<T>(K, false, g.data<T>(), x.data<T>(), dy->data<T>(), dy->numel, d, c.stream);
  });
  return true;
}

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

// ---- reductions (reduce.cpp's rules: dim (default [0]), keep_dim, reduce_all; sums in double) ----

struct ReduceSpec {
  Dims kept;      // X's shape with 1s at the reduced dims
  Dims out;       // the declared form
  int64_t count;  // elements summed into each output
};
ReduceSpec reduceSpec(DeviceOpContext& c, const Dims& x, bool all_by_op) {
  bool all = all_by_op || boolAttr(c.host, "reduce_all", false);
  Dims dims = all_by_op ? Dims{} : intsAttr(c.host, "dim", {0});
  if (dims.empty() || x.empty()) all = true;
  bool keep = !all_by_op && boolAttr(c.host, "keep_dim", false);
  std::vector<bool> reduced(x.size(), all);
  for (int64_t d : dims)
    if (!all) reduced[size_t(normaliseAxis(c.host, d, x.size(), "dim"))] = true;
  ReduceSpec s{x, {}, 1};
  for (size_t d = 0; d < x.size(); ++d) {
    if (reduced[d]) {
      s.count *= x[d];
      s.kept[d] = 1;
      if (keep) s.out.push_back(1);
    } else {
      s.out.push_back(x[d]);
    }
  }
  return s;
}
void requireReduced(DeviceOpContext& c, std::string_view name, const DevTensor& t, const ReduceSpec& s) {
  if (s.out.empty() && t.shape == Dims{1}) return;
  if (t.shape != s.out) kernelFail(c.host, std::string(name) + " " + shapeStr(t.shape) + " differs from " + shapeStr(s.out) + " (X reduced)");
}

template <bool Mean, bool AllByOp> bool reduceForward(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  requireFloatDev(c, "X", x);
  sameStorage(c, "Out", o, "X", x);
  ReduceSpec s = reduceSpec(c, x.shape, AllByOp);
  requireReduced(c, "Out", o, s);
  cuda::BroadcastDims d = toDims(c, planBroadcast(c.host, x.shape, s.kept, -1));
  double scale = Mean ? 1.0 / double(s.count) : 1.0;
  byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::reduceToY<T>(x.data<T>(), o.data<T>(), o.numel, d, scale, c.stream); });
  return true;
}

template <bool Mean, bool AllByOp> bool reduceBackward(DeviceOpContext& c) {
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  requireFloatDev(c, "Out@GRAD", g);
  sameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  if (const DevTensor* x = c.io.input("X")) sameShape(c, "X@GRAD", dx, "X", *x);
  ReduceSpec s = reduceSpec(c, dx.shape, AllByOp);
  requireReduced(c, "Out@GRAD", g, s);
  cuda::BroadcastDims d = toDims(c, planBroadcast(c.host, dx.shape, s.kept, -1));
  double scale = Mean ? 1.0 / double(s.count) : 1.0;
  byFloat(g, [&](auto tag) { using T = decltype(tag); cuda::broadcastFromY<T>(g.data<T>(), dx.data<T>(), dx.numel, d, scale, c.stream); });
  return true;
}

// ---- layer_norm: X viewed as [rows, cols] at begin_norm_axis (norm.cpp) ----

struct NormShape {
  int64_t rows, cols;
};
NormShape normShape(DeviceOpContext& c, const DevTensor& x) {
  int64_t axis = intAttr(c.host, "begin_norm_axis", 1), rank = int64_t(x.shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank || rank == 0)
    kernelFail(c.host, "begin_norm_axis " + std::to_string(intAttr(c.host, "begin_norm_axis", 1)) + " is out of range for X " + shapeStr(x.shape));
  return {product(x.shape, 0, size_t(axis)), product(x.shape, size_t(axis))};
}
// Statistics and parameters in X's own storage run on the device; the mixed-precision forms
// (float32 Mean with float64 X, which Paddle allows) go to the CPU kernel.
bool sameStorageOrAbsent(const DevTensor* t, const DevTensor& x) { return !t || t->storage() == x.storage(); }
void requireCount(DeviceOpContext& c, std::string_view name, const DevTensor* t, int64_t n) {
  if (t && t->numel != n) kernelFail(c.host, std::string(name) + " " + shapeStr(t->shape) + " should hold " + std::to_string(n) + " values");
}

bool layerNorm(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor *scale = c.io.input("Scale"), *bias = c.io.input("Bias");
  DevTensor& y = out(c, "Y");
  DevTensor *mean = c.io.output("Mean"), *var = c.io.output("Variance");
  likeInput(c, "X", x, "Y", y);
  for (const DevTensor* t : {scale, bias, static_cast<const DevTensor*>(mean), static_cast<const DevTensor*>(var)})
    if (!sameStorageOrAbsent(t, x)) return false;
  NormShape s = normShape(c, x);
  requireCount(c, "Scale", scale, s.cols);
  requireCount(c, "Bias", bias, s.cols);
  requireCount(c, "Mean", mean, s.rows);
  requireCount(c, "Variance", var, s.rows);
  double eps = floatAttr(c.host, "epsilon", 1e-5);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    cuda::layerNorm<T>(x.data<T>(), scale ? scale->data<T>() : nullptr, bias ? bias->data<T>() : nullptr, y.data<T>(),
                       mean ? mean->data<T>() : nullptr, var ? var->data<T>() : nullptr, s.rows, s.cols, eps, c.stream);
  });
  return true;
}

bool layerNormGrad(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor* scale = c.io.input("Scale");
  const DevTensor& mean = in(c, "Mean");
  const DevTensor& var = in(c, "Variance");
  const DevTensor& dy = in(c, "Y@GRAD");
  DevTensor *dx = c.io.output("X@GRAD"), *dscale = c.io.output("Scale@GRAD"), *dbias = c.io.output("Bias@GRAD");
  likeInput(c, "X", x, "Y@GRAD", dy);
  if (dx) likeInput(c, "X", x, "X@GRAD", *dx);
  for (const DevTensor* t : {scale, &mean, &var, static_cast<const DevTensor*>(dscale), static_cast<const DevTensor*>(dbias)})
    if (!sameStorageOrAbsent(t, x)) return false;
  NormShape s = normShape(c, x);
  requireCount(c, "Scale", scale, s.cols);
  requireCount(c, "Mean", &mean, s.rows);
  requireCount(c, "Variance", &var, s.rows);
  requireCount(c, "Scale@GRAD", dscale, s.cols);
  requireCount(c, "Bias@GRAD", dbias, s.cols);
  double eps = floatAttr(c.host, "epsilon", 1e-5);
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    cuda::layerNormGrad<T>(x.data<T>(), scale ? scale->data<T>() : nullptr, mean.data<T>(), var.data<T>(), dy.data<T>(),
                           dx ? dx->data<T>() : nullptr, dscale ? dscale->data<T>() : nullptr, dbias ? dbias->data<T>() : nullptr, s.rows,
                           s.cols, eps, c.stream);
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

// ---- data movement and the rest ----

bool assignLike(DeviceOpContext& c) {  // assign, depend: Out = X
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  sameShape(c, "Out", o, "X", x);
  sameStorage(c, "Out", o, "X", x);
  copyDev(c, x, o);
  return true;
}

bool nop(DeviceOpContext& c) {
  size_t n_out = c.io.outputCount("Out");
  if (n_out && n_out != c.io.inputCount("X"))
    kernelFail(c.host, "has " + std::to_string(n_out) + " Out but " + std::to_string(c.io.inputCount("X")) + " X");
  for (size_t i = 0; i < n_out; ++i) {
    DevTensor* o = c.io.output("Out", i);
    if (!o) continue;
    const DevTensor& x = in(c, "X", i);
    sameShape(c, "Out", *o, "X", x);
    copyDev(c, x, *o);
  }
  return true;
}

// The dtype attribute's storage when it is one this device path knows (Paddle codes float32 5,
// float64 6, int32 2, int64 3, bool 0, or a dtype name).
std::optional<Storage> fillStorage(DeviceOpContext& c) {
  if (auto name = stringAttrIfString(c.host, "dtype")) {
    std::string_view n = *name;
    if (n.substr(0, 7) == "paddle.") n.remove_prefix(7);
    if (auto t = parseDType(n)) return storageOf(*t);
    return std::nullopt;
  }
  switch (intAttr(c.host, "dtype", 5)) {
    case 5: return Storage::F32;
    case 6: return Storage::F64;
    case 2:
    case 3: return Storage::I64;
    case 0: return Storage::U8;
    default: return std::nullopt;
  }
}

// Values and shapes from tensors, str_value, or a dtype that disagrees with Out: the CPU kernel
// handles those (and reports the errors).
bool fillConstant(DeviceOpContext& c) {
  if (c.io.input("ValueTensor") || c.io.input("ShapeTensor") || c.io.inputCount("ShapeTensorList") ||
      !stringAttr(c.host, "str_value", "").empty())
    return false;
  DevTensor& o = out(c, "Out");
  if (c.host.op.attrs.has("dtype")) {
    auto st = fillStorage(c);
    if (!st || *st != o.storage()) return false;
  }
  if (c.host.op.attrs.has("shape")) {
    Dims shape = intsAttr(c.host, "shape", {});
    if (o.shape != shape && !(shape.empty() && o.numel == 1) && !(o.shape.empty() && shape == Dims{1}))
      kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(shape) + " (the shape attribute)");
  }
  double v = floatAttr(c.host, "value", 0.0);
  switch (o.storage()) {
    case Storage::F32: cuda::fill<float>(o.data<float>(), o.numel, float(v), c.stream); break;
    case Storage::F64: cuda::fill<double>(o.data<double>(), o.numel, v, c.stream); break;
    case Storage::I64: cuda::fill<int64_t>(o.data<int64_t>(), o.numel, int64_t(v), c.stream); break;
    case Storage::U8:
      cuda::fill<uint8_t>(o.data<uint8_t>(), o.numel, uint8_t(o.dtype == DType::Bool ? v != 0.0 : uint8_t(int64_t(v))), c.stream);
      break;
  }
  return true;
}

// sum: Out = X[0] + X[1] + ... in input order, in double (as the CPU kernel).
bool sum(DeviceOpContext& c) {
  size_t n = c.io.inputCount("X");
  if (n == 0) kernelFail(c.host, "has no X");
  if (n > size_t(cuda::kMaxSumInputs)) return false;
  DevTensor& o = out(c, "Out");
  requireFloatDev(c, "Out", o);
  for (size_t i = 0; i < n; ++i) {
    const DevTensor& xi = in(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    sameStorage(c, name, xi, "Out", o);
    sameShape(c, name, xi, "Out", o);
  }
  byFloat(o, [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> xs;
    for (size_t i = 0; i < n; ++i) xs.push_back(in(c, "X", i).data<T>());
    cuda::sumInputs<T>(xs.data(), int(n), o.data<T>(), o.numel, c.stream);
  });
  return true;
}

bool reshape2(DeviceOpContext& c) {
  if (c.io.input("Shape")) return false;
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  if (o.numel != x.numel) kernelFail(c.host, "Out " + shapeStr(o.shape) + " does not hold the elements of X " + shapeStr(x.shape));
  sameStorage(c, "Out", o, "X", x);
  copyDev(c, x, o);
  return true;
}
bool reshape2Grad(DeviceOpContext& c) {
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  if (dx.numel != g.numel) kernelFail(c.host, "X@GRAD " + shapeStr(dx.shape) + " and Out@GRAD " + shapeStr(g.shape) + " differ in size");
  sameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  copyDev(c, g, dx);
  return true;
}

std::vector<int> permFromAxis(DeviceOpContext& c, size_t rank) {
  Dims axis = intsAttr(c.host, "axis", {});
  if (axis.size() != rank || rank > size_t(cuda::kMaxDims)) kernelFail(c.host, "axis " + shapeStr(axis) + " is not a permutation of " + std::to_string(rank) + " dims");
  std::vector<int> perm(rank);
  std::vector<char> seen(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = axis[i] < 0 ? axis[i] + int64_t(rank) : axis[i];
    if (a < 0 || a >= int64_t(rank) || seen[size_t(a)]) kernelFail(c.host, "axis " + shapeStr(axis) + " is not a permutation");
    seen[size_t(a)] = 1;
    perm[i] = int(a);
  }
  return perm;
}

bool transpose2(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  sameStorage(c, "Out", o, "X", x);
  std::vector<int> perm = permFromAxis(c, x.shape.size());
  Dims want(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) want[i] = x.shape[size_t(perm[i])];
  if (o.shape != want) kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(want) + " (X transposed by axis)");
  cuda::permute(x.buf.get(), o.buf.get(), int(perm.size()), x.shape.data(), perm.data(), x.numel, int(storageSize(x.storage())), c.stream);
  return true;
}
bool transpose2Grad(DeviceOpContext& c) {
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  sameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  std::vector<int> perm = permFromAxis(c, dx.shape.size());
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int(i);
  Dims gshape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) gshape[i] = dx.shape[size_t(perm[i])];
  if (g.shape != gshape) kernelFail(c.host, "Out@GRAD " + shapeStr(g.shape) + " differs from " + shapeStr(gshape) + " (X transposed by axis)");
  cuda::permute(g.buf.get(), dx.buf.get(), int(perm.size()), g.shape.data(), inverse.data(), g.numel, int(storageSize(g.storage())), c.stream);
  return true;
}

// split / concat: each part is a strided block copy (outer rows of part * inner elements).
void copyBlock(DeviceOpContext& c, void* dst, size_t dst_row, const void* src, size_t src_row, size_t width, int64_t rows) {
  if (width && rows)
    cudaCheck(cudaMemcpy2DAsync(dst, dst_row, src, src_row, width, size_t(rows), cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpy2DAsync");
}

bool split(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  size_t n_out = c.io.outputCount("Out");
  if (n_out == 0) kernelFail(c.host, "has no Out");
  if (x.shape.empty()) kernelFail(c.host, "X is 0-D");
  int64_t axis = normaliseAxis(c.host, intAttr(c.host, "axis", 0), x.shape.size(), "axis");
  int64_t len = x.shape[size_t(axis)], num = intAttr(c.host, "num", 0);
  Dims sections = intsAttr(c.host, "sections", {});
  if (num > 0) {
    if (len % num != 0) kernelFail(c.host, "X " + shapeStr(x.shape) + " dim " + std::to_string(axis) + " does not split into " + std::to_string(num) + " equal parts");
    sections.assign(size_t(num), len / num);
  } else {
    int64_t known = 0, infer = -1;
    for (size_t i = 0; i < sections.size(); ++i) {
      if (sections[i] == -1 && infer < 0) infer = int64_t(i);
      else if (sections[i] < 0) kernelFail(c.host, "sections " + shapeStr(sections) + " has more than one -1 or a negative size");
      else known += sections[i];
    }
    if (infer >= 0) sections[size_t(infer)] = len - known;
    int64_t total = 0;
    for (int64_t v : sections) total += v;
    if (sections.empty() || total != len || (infer >= 0 && sections[size_t(infer)] < 0))
      kernelFail(c.host, "sections " + shapeStr(intsAttr(c.host, "sections", {})) + " do not add up to dim " + std::to_string(axis) + " of X " + shapeStr(x.shape));
  }
  if (sections.size() != n_out)
    kernelFail(c.host, "splits X into " + std::to_string(sections.size()) + " parts but has " + std::to_string(n_out) + " Out");
  int64_t outer = product(x.shape, 0, size_t(axis)), inner = product(x.shape, size_t(axis) + 1);
  size_t elem = storageSize(x.storage());
  int64_t start = 0;
  for (size_t i = 0; i < n_out; ++i) {
    DevTensor* o = c.io.output("Out", i);
    int64_t part = sections[i];
    if (o) {
      std::string name = "Out[" + std::to_string(i) + "]";
      sameStorage(c, name, *o, "X", x);
      Dims want = x.shape;
      want[size_t(axis)] = part;
      if (o->shape != want) kernelFail(c.host, name + " " + shapeStr(o->shape) + " differs from " + shapeStr(want) + " (a part of X)");
      copyBlock(c, o->buf.get(), size_t(part * inner) * elem, static_cast<const std::byte*>(x.buf.get()) + size_t(start * inner) * elem,
                size_t(len * inner) * elem, size_t(part * inner) * elem, outer);
    }
    start += part;
  }
  return true;
}

bool concat(DeviceOpContext& c) {
  size_t n_in = c.io.inputCount("X");
  if (n_in == 0) kernelFail(c.host, "has no X");
  DevTensor& o = out(c, "Out");
  const DevTensor& x0 = in(c, "X", 0);
  if (x0.shape.empty()) kernelFail(c.host, "X[0] is 0-D");
  int64_t axis = normaliseAxis(c.host, intAttr(c.host, "axis", 0), x0.shape.size(), "axis");
  Dims want = x0.shape;
  want[size_t(axis)] = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const DevTensor& xi = in(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    sameStorage(c, name, xi, "Out", o);
    Dims a = xi.shape, b = x0.shape;
    if (a.size() != b.size()) kernelFail(c.host, name + " " + shapeStr(a) + " and X[0] " + shapeStr(b) + " differ in rank");
    a[size_t(axis)] = b[size_t(axis)] = 0;
    if (a != b) kernelFail(c.host, name + " " + shapeStr(xi.shape) + " and X[0] " + shapeStr(x0.shape) + " differ outside axis " + std::to_string(axis));
    want[size_t(axis)] += xi.shape[size_t(axis)];
  }
  if (o.shape != want) kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(want) + " (X joined along axis)");
  int64_t outer = product(want, 0, size_t(axis)), inner = product(want, size_t(axis) + 1);
  size_t elem = storageSize(o.storage()), out_row = size_t(want[size_t(axis)] * inner) * elem, start = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const DevTensor& xi = in(c, "X", i);
    size_t block = size_t(xi.shape[size_t(axis)] * inner) * elem;
    copyBlock(c, static_cast<std::byte*>(o.buf.get()) + start, out_row, xi.buf.get(), block, block, outer);
    start += block;
  }
  return true;
}

bool sgd(DeviceOpContext& c) {
  const DevTensor& param = in(c, "Param");
  const DevTensor& lr = in(c, "LearningRate");
  const DevTensor& grad = in(c, "Grad");
  DevTensor& o = out(c, "ParamOut");
  requireFloatDev(c, "Param", param);
  likeInput(c, "Param", param, "Grad", grad);
  likeInput(c, "Param", param, "ParamOut", o);
  if (lr.numel != 1) kernelFail(c.host, "LearningRate " + shapeStr(lr.shape) + " should hold one element");
  // The rate is one device scalar: read it back (a sync; sgd runs once per parameter per step).
  double rate = 0;
  if (lr.storage() == Storage::F32 || lr.storage() == Storage::F64 || lr.storage() == Storage::I64) {
    unsigned char raw[8] = {};
    cudaCheck(cudaMemcpyAsync(raw, lr.buf.get(), lr.bytes(), cudaMemcpyDeviceToHost, c.stream), "cudaMemcpyAsync");
    cudaCheck(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
    if (lr.storage() == Storage::F32) { float f; std::memcpy(&f, raw, 4); rate = f; }
    else if (lr.storage() == Storage::F64) std::memcpy(&rate, raw, 8);
    else { int64_t i; std::memcpy(&i, raw, 8); rate = double(i); }
  } else {
    return false;
  }
  byFloat(param, [&](auto tag) {
    using T = decltype(tag);
    cuda::axpyFrom<T>(param.data<T>(), grad.data<T>(), o.data<T>(), param.numel, T(rate), c.stream);
  });
  return true;
}

const std::unordered_map<std::string_view, DeviceKernelFn>& table() {
  static const std::unordered_map<std::string_view, DeviceKernelFn> t = {
      {"matmul_v2", matmulV2},
      {"matmul_v2_grad", matmulV2Grad},
      {"elementwise_add", binaryForward<cuda::Binary::Add>},
      {"elementwise_mul", binaryForward<cuda::Binary::Mul>},
      {"elementwise_add_grad", binaryBackward<cuda::Binary::Add>},
      {"elementwise_mul_grad", binaryBackward<cuda::Binary::Mul>},
      {"relu", relu},
      {"relu_grad", reluGrad},
      {"gelu", gelu},
      {"gelu_grad", geluGrad},
      {"scale", scale},
      {"softmax", softmax},
      {"softmax_grad", softmaxGrad},
      {"reduce_sum", reduceForward<false, false>},
      {"reduce_mean", reduceForward<true, false>},
      {"mean", reduceForward<true, true>},
      {"reduce_sum_grad", reduceBackward<false, false>},
      {"reduce_mean_grad", reduceBackward<true, false>},
      {"mean_grad", reduceBackward<true, true>},
      {"layer_norm", layerNorm},
      {"layer_norm_grad", layerNormGrad},
      {"dropout", dropout},
      {"dropout_grad", dropoutGrad},
      {"assign", assignLike},
      {"depend", assignLike},
      {"nop", nop},
      {"fill_constant", fillConstant},
      {"sum", sum},
      {"reshape2", reshape2},
      {"reshape2_grad", reshape2Grad},
      {"split", split},
      {"concat", concat},
      {"transpose2", transpose2},
      {"transpose2_grad", transpose2Grad},
      {"sgd", sgd},
  };
  return t;
}

}  // namespace

DeviceKernelFn findDeviceKernel(std::string_view op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string_view> deviceKernelOps() {
  std::vector<std::string_view> ops;
  for (const auto& [type, fn] : table()) ops.push_back(type);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace spopt::rt
