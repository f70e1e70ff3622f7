// Device matmul (cuBLAS), elementwise with broadcasting, reductions and layer_norm, with grads.
#include <type_traits>

#include "runtime/kernels/matmul_plan.h"
#include "runtime/nccl/device_op_util.h"

namespace spopt::rt::device_ops {
namespace {

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

template <cuda::Binary K> bool binaryForward(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  const DevTensor& y = in(c, "Y");
  DevTensor& o = out(c, "Out");
  requireFloatDev(c, "X", x);
  sameStorage(c, "Y", y, "X", x);
  sameStorage(c, "Out", o, "X", x);
  BroadcastPlan p = planBroadcast(c.host, x.shape, y.shape, intAttr(c.host, "axis", -1));
  if (o.shape != p.out_shape) kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(p.out_shape) + " (X and Y broadcast)");
  std::optional<cuda::BroadcastDims> d = toDims(p);
  if (!d) return false;
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    cuda::binary<T>(K, x.data<T>(), y.data<T>(), o.data<T>(), *d, o.numel, c.stream);
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
  std::optional<cuda::BroadcastDims> d = toDims(p);
  if (!d) return false;
  byFloat(x, [&](auto tag) {
    using T = decltype(tag);
    if (dx) cuda::binaryGrad<T>(K, true, g.data<T>(), y.data<T>(), dx->data<T>(), dx->numel, *d, c.stream);
    if (dy) cuda::binaryGrad<T>(K, false, g.data<T>(), x.data<T>(), dy->data<T>(), dy->numel, *d, c.stream);
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
  std::optional<cuda::BroadcastDims> d = toDims(planBroadcast(c.host, x.shape, s.kept, -1));
  if (!d) return false;
  double scale = Mean ? 1.0 / double(s.count) : 1.0;
  byFloat(x, [&](auto tag) { using T = decltype(tag); cuda::reduceToY<T>(x.data<T>(), o.data<T>(), o.numel, *d, scale, c.stream); });
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
  std::optional<cuda::BroadcastDims> d = toDims(planBroadcast(c.host, dx.shape, s.kept, -1));
  if (!d) return false;
  double scale = Mean ? 1.0 / double(s.count) : 1.0;
  byFloat(g, [&](auto tag) { using T = decltype(tag); cuda::broadcastFromY<T>(g.data<T>(), dx.data<T>(), dx.numel, *d, scale, c.stream); });
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

}  // namespace

void registerMathOps(DeviceOpTable& t) {
  t.emplace("matmul", matmulV2);
  t.emplace("matmul_grad", matmulV2Grad);
  t.emplace("add", binaryForward<cuda::Binary::Add>);
  t.emplace("multiply", binaryForward<cuda::Binary::Mul>);
  t.emplace("add_grad", binaryBackward<cuda::Binary::Add>);
  t.emplace("multiply_grad", binaryBackward<cuda::Binary::Mul>);
  t.emplace("sum", reduceForward<false, false>);
  t.emplace("mean", reduceForward<true, false>);
  t.emplace("mean_all", reduceForward<true, true>);
  t.emplace("sum_grad", reduceBackward<false, false>);
  t.emplace("mean_grad", reduceBackward<true, false>);
  t.emplace("mean_all_grad", reduceBackward<true, true>);
  t.emplace("layer_norm", layerNorm);
  t.emplace("layer_norm_grad", layerNormGrad);
}

}  // namespace spopt::rt::device_ops
