// The legacy mul (+ grad), top_k_v2, accuracy and the momentum optimizer.
#include <algorithm>
#include <numeric>
#include <vector>

#include "runtime/kernels/blas.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// mul flattens X to [rows, k] at x_num_col_dims and Y to [k, cols] at y_num_col_dims.
struct MulShape {
  int64_t rows, k, cols;
  std::vector<int64_t> out;
};

MulShape mulShape(const KernelContext& c, const Tensor& x, const Tensor& y) {
  requireFloat(c, "X", x);
  requireSameStorage(c, "Y", y, "X", x);
  int64_t xn = intAttr(c, "x_num_col_dims", 1), yn = intAttr(c, "y_num_col_dims", 1);
  const auto &xs = x.shape(), &ys = y.shape();
  if (xn < 1 || xn >= int64_t(xs.size())) kernelFail(c, "x_num_col_dims " + std::to_string(xn) + " is out of range for X " + shapeStr(xs));
  if (yn < 1 || yn >= int64_t(ys.size())) kernelFail(c, "y_num_col_dims " + std::to_string(yn) + " is out of range for Y " + shapeStr(ys));
  MulShape s{product(xs, 0, size_t(xn)), product(xs, size_t(xn)), product(ys, size_t(yn)), {}};
  if (product(ys, 0, size_t(yn)) != s.k)
    kernelFail(c, "X " + shapeStr(xs) + " flattened has " + std::to_string(s.k) + " columns but Y " + shapeStr(ys) + " flattened has " +
                      std::to_string(product(ys, 0, size_t(yn))) + " rows");
  s.out.assign(xs.begin(), xs.begin() + xn);
  s.out.insert(s.out.end(), ys.begin() + yn, ys.end());
  return s;
}

void mul(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  Tensor& out = requireOutput(c, "Out");
  MulShape s = mulShape(c, x, y);
  requireSameStorage(c, "Out", out, "X", x);
  requireShape(c, "Out", out, s.out, "X times Y");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    blasGemm(false, false, s.rows, s.cols, s.k, x.data<T>(), s.k, y.data<T>(), s.cols, T(0), out.data<T>(), s.cols);
  });
}

// dX = dOut . Y^T, dY = X^T . dOut (on the flattened views).
void mulGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dy = optionalOutput(c, "Y@GRAD");
  MulShape s = mulShape(c, x, y);
  requireSameStorage(c, "Out@GRAD", g, "X", x);
  requireShape(c, "Out@GRAD", g, s.out, "X times Y");
  requireOperandGrads(c, x, y, dx, dy);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    if (dx) blasGemm(false, true, s.rows, s.k, s.cols, g.data<T>(), s.cols, y.data<T>(), s.cols, T(0), dx->data<T>(), s.k);
    if (dy) blasGemm(true, false, s.k, s.cols, s.rows, x.data<T>(), s.k, g.data<T>(), s.cols, T(0), dy->data<T>(), s.cols);
  });
}

// top_k_v2: the k largest (or smallest) values along `axis` and their int64 indices. Ties go to
// the lower index; sorted=false keeps the same order (a valid answer: Paddle leaves it unspecified).
void topK(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  Tensor& idx = requireOutput(c, "Indices");
  requireFloat(c, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  if (idx.storage() != Storage::I64) kernelFail(c, "Indices is " + std::string(dtypeName(idx.dtype())) + ", not an integer type");
  int64_t k = intAttr(c, "k", 1);
  if (const Tensor* kt = optionalInput(c, "K")) {
    if (kt->numel() != 1) kernelFail(c, "K " + shapeStr(kt->shape()) + " should hold one element");
    k = int64_t(scalarAt(*kt));
  }
  std::vector<int64_t> shape = x.shape();
  if (shape.empty()) shape = {1};
  size_t axis = size_t(normaliseAxis(c, intAttr(c, "axis", -1), shape.size(), "axis"));
  int64_t n = shape[axis];
  if (k < 1 || k > n)
    kernelFail(c, "k " + std::to_string(k) + " is out of range for X " + shapeStr(x.shape()) + " along axis " + std::to_string(axis));
  std::vector<int64_t> want = shape;
  want[axis] = k;
  requireShape(c, "Out", out, want, "X with k along axis");
  requireShape(c, "Indices", idx, want, "X with k along axis");
  bool largest = boolAttr(c, "largest", true);
  int64_t outer = product(shape, 0, axis), inner = product(shape, axis + 1);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = xp + o * n * inner + i;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          T va = row[a * inner], vb = row[b * inner];
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          int64_t at = (o * k + j) * inner + i;
          out.data<T>()[at] = row[order[size_t(j)] * inner];
          idx.data<int64_t>()[at] = order[size_t(j)];
        }
      }
  });
}

void storeNumber(Tensor& t, double v) {
  switch (t.storage()) {
    case Storage::F32: t.data<float>()[0] = float(v); break;
    case Storage::F64: t.data<double>()[0] = v; break;
    case Storage::I64: t.data<int64_t>()[0] = int64_t(v); break;
    case Storage::U8: t.data<uint8_t>()[0] = uint8_t(v); break;
  }
}

// accuracy: a row is correct when any of its top-k Indices equals its Label; Accuracy is the
// correct fraction, Correct and Total the counts.
void accuracy(KernelContext& c) {
  const Tensor& indices = requireInput(c, "Indices");
  const Tensor& label = requireInput(c, "Label");
  Tensor& acc = requireOutput(c, "Accuracy");
  Tensor* correct = optionalOutput(c, "Correct");
  Tensor* total = optionalOutput(c, "Total");
  if (indices.storage() != Storage::I64 || label.storage() != Storage::I64)
    kernelFail(c, "Indices and Label should be integer tensors, are " + std::string(dtypeName(indices.dtype())) + " and " +
                      std::string(dtypeName(label.dtype())));
  int64_t rows = indices.shape().empty() ? 1 : indices.shape()[0];
  int64_t k = rows ? indices.numel() / rows : 0;
  if (label.numel() != rows)
    kernelFail(c, "Label " + shapeStr(label.shape()) + " should hold one label per row of Indices " + shapeStr(indices.shape()));
  for (Tensor* t : {&acc, correct, total})
    if (t && t->numel() != 1) kernelFail(c, "Accuracy, Correct and Total should hold one element each");
  const int64_t* ip = indices.data<int64_t>();
  const int64_t* lp = label.data<int64_t>();
  int64_t hits = 0;
  for (int64_t r = 0; r < rows; ++r)
    hits += std::find(ip + r * k, ip + (r + 1) * k, lp[r]) != ip + (r + 1) * k ? 1 : 0;
  storeNumber(acc, rows ? double(hits) / double(rows) : 0.0);
  if (correct) storeNumber(*correct, double(hits));
  if (total) storeNumber(*total, double(rows));
}

// momentum, as Paddle's GPU kernel (the device the jobs ran on; the CPU one ignores
// rescale_grad): g = Grad * rescale_grad (+ regularization_coeff * Param for l2_decay);
// VelocityOut = mu * Velocity + g; ParamOut = Param - lr * VelocityOut, or with Nesterov
// Param - lr * (g + mu * VelocityOut). Elementwise: the outputs may alias the inputs.
void momentum(KernelContext& c) {
  const Tensor& param = requireInput(c, "Param");
  const Tensor& grad = requireInput(c, "Grad");
  const Tensor& vel = requireInput(c, "Velocity");
  const Tensor& lr = requireInput(c, "LearningRate");
  Tensor& param_out = requireOutput(c, "ParamOut");
  Tensor& vel_out = requireOutput(c, "VelocityOut");
  requireFloat(c, "Param", param);
  for (auto [name, t] : {std::pair<const char*, const Tensor*>{"Grad", &grad}, {"Velocity", &vel}, {"ParamOut", &param_out},
                         {"VelocityOut", &vel_out}}) {
    requireSameStorage(c, name, *t, "Param", param);
    requireSameShape(c, name, *t, "Param", param);
  }
  if (boolAttr(c, "multi_precision", false)) kernelFail(c, "multi_precision (a float32 master copy of the parameter) is not supported");
  if (lr.numel() != 1) kernelFail(c, "LearningRate " + shapeStr(lr.shape()) + " should hold one element");
  std::string reg = stringAttr(c, "regularization_method", "");
  if (!reg.empty() && reg != "l2_decay") kernelFail(c, "regularization_method \"" + reg + "\" is neither empty nor l2_decay");
  double coeff = reg.empty() ? 0.0 : floatAttr(c, "regularization_coeff", 0.0);
  double mu_d = floatAttr(c, "mu", 0.9), rescale_d = floatAttr(c, "rescale_grad", 1.0);
  bool nesterov = boolAttr(c, "use_nesterov", false);
  dispatchFloat(c, "Param", param, [&](auto tag) {
    using T = decltype(tag);
    const T *p = param.data<T>(), *g = grad.data<T>(), *v = vel.data<T>();
    T *po = param_out.data<T>(), *vo = vel_out.data<T>();
    T rate = T(scalarAt(lr)), mu = T(mu_d), rescale = T(rescale_d), l2 = T(coeff);
    for (int64_t i = 0, n = param.numel(); i < n; ++i) {
      T gi = g[i] * rescale + l2 * p[i];
      T vi = v[i] * mu + gi;
      T pi = nesterov ? p[i] - (gi + vi * mu) * rate : p[i] - rate * vi;
      vo[i] = vi;
      po[i] = pi;
    }
  });
}

}  // namespace

void registerVisionTrainKernels(KernelTable& t) {
  t.add("mul", mul);
  t.add("mul_grad", mulGrad);
  t.add("topk", topK);
  t.add("accuracy", accuracy);
  t.add("momentum", momentum);
}

}  // namespace spopt::rt
