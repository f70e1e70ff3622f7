// INTERIM, to be deleted when branch `kernels` (the real lib/runtime/kernels/) is merged:
// the few float32/float64 ops the runtime's own tests need before then.
#include <cblas.h>

#include <cmath>
#include <cstring>

#include "runtime/kernels/kernels.h"

namespace spopt::rt {
namespace {

const Tensor& in(KernelContext& c, std::string_view slot, size_t i = 0) {
  const Tensor* t = c.io.input(slot, i);
  if (!t) throw KernelError("missing input " + std::string(slot));
  return *t;
}
Tensor& out(KernelContext& c, std::string_view slot, size_t i = 0) {
  Tensor* t = c.io.output(slot, i);
  if (!t) throw KernelError("missing output " + std::string(slot));
  return *t;
}

template <typename F>
void unary(KernelContext& c, std::string_view is, std::string_view os, F f) {
  const Tensor& x = in(c, is);
  Tensor& y = out(c, os);
  if (x.numel() != y.numel()) throw KernelError("output size differs from input");
  if (x.storage() == Storage::F64)
    for (int64_t i = 0; i < x.numel(); ++i) y.data<double>()[i] = f(x.data<double>()[i]);
  else
    for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = float(f(double(x.data<float>()[i])));
}

void assign(KernelContext& c) {
  const Tensor& x = in(c, "X");
  Tensor& y = out(c, "Out");
  if (x.bytes() != y.bytes()) throw KernelError("output size differs from input");
  if (x.bytes()) std::memcpy(y.raw(), x.raw(), x.bytes());
}

void scale(KernelContext& c) {
  double s = c.op.attrs.getNumber("scale").value_or(1.0), b = c.op.attrs.getNumber("bias").value_or(0.0);
  bool after = c.op.attrs.getBool("bias_after_scale").value_or(true);
  unary(c, "X", "Out", [&](double v) { return after ? v * s + b : (v + b) * s; });
}

void gelu(KernelContext& c) {
  unary(c, "X", "Out", [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
}

void elementwiseAdd(KernelContext& c) {
  const Tensor& x = in(c, "X");
  const Tensor& y = in(c, "Y");
  Tensor& z = out(c, "Out");
  if (y.numel() == 0 || x.numel() % y.numel() || z.numel() != x.numel()) throw KernelError("unsupported broadcast");
  int64_t m = y.numel();
  if (x.storage() == Storage::F64)
    for (int64_t i = 0; i < x.numel(); ++i) z.data<double>()[i] = x.data<double>()[i] + y.data<double>()[i % m];
  else
    for (int64_t i = 0; i < x.numel(); ++i) z.data<float>()[i] = x.data<float>()[i] + y.data<float>()[i % m];
}

void split(KernelContext& c) {
  const Tensor& x = in(c, "X");
  int64_t axis = c.op.attrs.getInt("axis").value_or(0);
  if (axis < 0) axis += int64_t(x.shape().size());
  int64_t outer = 1, inner = int64_t(storageSize(x.storage()));
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  int64_t at = 0, total = x.shape()[size_t(axis)];
  for (size_t k = 0; k < c.io.outputCount("Out"); ++k) {
    Tensor& y = out(c, "Out", k);
    int64_t len = y.shape()[size_t(axis)];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<std::byte*>(y.raw()) + o * len * inner,
                  static_cast<const std::byte*>(x.raw()) + (o * total + at) * inner, size_t(len * inner));
    at += len;
  }
}

void matmul(KernelContext& c) {
  const Tensor& x = in(c, "X");
  const Tensor& w = in(c, "Y");
  Tensor& y = out(c, "Out");
  if (c.op.attrs.getBool("trans_x").value_or(false) || w.shape().size() != 2) throw KernelError("interim matmul: 2-D Y, no trans_x");
  bool ty = c.op.attrs.getBool("trans_y").value_or(false);
  int64_t k = x.shape().back(), m = x.numel() / k, n = ty ? w.shape()[0] : w.shape()[1];
  if ((ty ? w.shape()[1] : w.shape()[0]) != k || y.numel() != m * n) throw KernelError("matmul shapes disagree");
  auto tb = ty ? CblasTrans : CblasNoTrans;
  if (x.storage() == Storage::F64)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, tb, int(m), int(n), int(k), 1.0, x.data<double>(), int(k), w.data<double>(),
                int(w.shape()[1]), 0.0, y.data<double>(), int(n));
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, int(m), int(n), int(k), 1.0f, x.data<float>(), int(k), w.data<float>(),
                int(w.shape()[1]), 0.0f, y.data<float>(), int(n));
}

}  // namespace

KernelFn findKernel(std::string_view t) {
  if (t == "assign") return assign;
  if (t == "scale") return scale;
  if (t == "gelu") return gelu;
  if (t == "elementwise_add") return elementwiseAdd;
  if (t == "split") return split;
  if (t == "matmul_v2") return matmul;
  return nullptr;
}

std::vector<std::string_view> supportedKernelOps() { return {"assign", "elementwise_add", "gelu", "matmul_v2", "scale", "split"}; }

}  // namespace spopt::rt
