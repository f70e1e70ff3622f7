// The Llama layer's compute kernels: rms_norm, silu, swiglu and fused_rotary_position_embedding,
// with their grads. Statistics and products are formed in double and rounded once to the storage
// type; row sums use laneSum's fixed order.
#include <cmath>
#include <type_traits>
#include <vector>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

struct Rows {
  int64_t rows, cols;
};

// x as [rows, cols] split at begin_norm_axis.
Rows normRows(const KernelContext& c, const Tensor& x) {
  int64_t raw = intAttr(c, "begin_norm_axis", -1), rank = int64_t(x.shape().size()), axis = raw < 0 ? raw + rank : raw;
  if (rank == 0 || axis < 0 || axis > rank)
    kernelFail(c, "begin_norm_axis " + std::to_string(raw) + " is out of range for x " + shapeStr(x.shape()));
  return {product(x.shape(), 0, size_t(axis)), product(x.shape(), size_t(axis))};
}

void requireValues(const KernelContext& c, std::string_view name, const Tensor* t, int64_t n, std::string_view what) {
  if (!t) return;
  requireFloat(c, name, *t);
  if (t->numel() != n)
    kernelFail(c, std::string(name) + " " + shapeStr(t->shape()) + " should hold " + std::to_string(n) + " values (" + std::string(what) + ")");
}

void storeAt(Tensor& t, int64_t i, double v) {
  if (t.storage() == Storage::F32) t.data<float>()[i] = float(v);
  else t.data<double>()[i] = v;
}

// A per-column parameter (norm_weight, norm_bias) as doubles, `fill` when absent.
std::vector<double> columnParam(const Tensor* t, int64_t cols, double fill) {
  std::vector<double> v(size_t(cols), fill);
  if (t)
    for (int64_t j = 0; j < cols; ++j) v[size_t(j)] = scalarAt(*t, j);
  return v;
}

// rms_norm: out = x / sqrt(mean(x^2) + epsilon) * norm_weight + norm_bias per row; inv_var keeps
// the row's 1 / sqrt(mean(x^2) + epsilon) for the grad.
void rmsNorm(KernelContext& c) {
  const Tensor& x = requireInput(c, "x");
  if (optionalInput(c, "bias") || optionalInput(c, "residual"))
    kernelFail(c, "bias and residual (Paddle's fused pre-add) are not supported: give x as their sum");
  if (floatAttr(c, "quant_scale", -1) > 0) kernelFail(c, "quantised output (quant_scale > 0) is not supported");
  const Tensor* w = optionalInput(c, "norm_weight");
  const Tensor* b = optionalInput(c, "norm_bias");
  Tensor& out = requireOutput(c, "out");
  Tensor* inv = optionalOutput(c, "inv_var");
  Tensor* residual_out = optionalOutput(c, "residual_out");
  requireFloat(c, "x", x);
  requireSameStorage(c, "out", out, "x", x);
  requireSameShape(c, "out", out, "x", x);
  Rows s = normRows(c, x);
  requireValues(c, "norm_weight", w, s.cols, "the normalised dims of x");
  requireValues(c, "norm_bias", b, s.cols, "the normalised dims of x");
  requireValues(c, "inv_var", inv, s.rows, "the leading dims of x");
  // With no bias or residual to add, the pre-add's sum is x itself.
  if (residual_out) copyTensor(c, x, "x", *residual_out, "residual_out");
  double eps = floatAttr(c, "epsilon", 1e-6);
  std::vector<double> g = columnParam(w, s.cols, 1.0), beta = columnParam(b, s.cols, 0.0);
  dispatchFloat(c, "x", x, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data<T>() + r * s.cols;
      T* yr = out.data<T>() + r * s.cols;
      double ms = laneSum(s.cols, [&](int64_t j) { return double(xr[j]) * double(xr[j]); }) / double(s.cols);
      double rstd = 1.0 / std::sqrt(ms + eps);
      for (int64_t j = 0; j < s.cols; ++j) yr[j] = T(double(xr[j]) * rstd * g[size_t(j)] + beta[size_t(j)]);
      if (inv) storeAt(*inv, r, rstd);
    }
  });
}

// With xhat = x * inv_var and dxhat = dout * norm_weight, per row of n values:
//   dx = inv_var * (dxhat - xhat * mean(dxhat * xhat)),
//   dnorm_weight = sum over rows of dout * xhat, dnorm_bias = sum over rows of dout.
void rmsNormGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "x");
  const Tensor* w = optionalInput(c, "norm_weight");
  const Tensor& inv = requireInput(c, "inv_var");
  const Tensor& dy = requireInput(c, "out@GRAD");
  if (optionalInput(c, "bias") || optionalInput(c, "residual"))
    kernelFail(c, "bias and residual (Paddle's fused pre-add) are not supported: give x as their sum");
  Tensor* dx = optionalOutput(c, "x@GRAD");
  Tensor* dw = optionalOutput(c, "norm_weight@GRAD");
  Tensor* db = optionalOutput(c, "norm_bias@GRAD");
  requireFloat(c, "x", x);
  requireSameStorage(c, "out@GRAD", dy, "x", x);
  requireSameShape(c, "out@GRAD", dy, "x", x);
  if (dx) {
    requireSameStorage(c, "x@GRAD", *dx, "x", x);
    requireSameShape(c, "x@GRAD", *dx, "x", x);
  }
  Rows s = normRows(c, x);
  requireValues(c, "norm_weight", w, s.cols, "the normalised dims of x");
  requireValues(c, "inv_var", &inv, s.rows, "the leading dims of x");
  requireValues(c, "norm_weight@GRAD", dw, s.cols, "the normalised dims of x");
  requireValues(c, "norm_bias@GRAD", db, s.cols, "the normalised dims of x");
  std::vector<double> g = columnParam(w, s.cols, 1.0);
  std::vector<double> acc_w(size_t(dw ? s.cols : 0), 0.0), acc_b(size_t(db ? s.cols : 0), 0.0);
  std::vector<double> xhat(size_t(s.cols)), dxhat(size_t(s.cols));
  dispatchFloat(c, "x", x, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data<T>() + r * s.cols;
      const T* dyr = dy.data<T>() + r * s.cols;
      double rstd = scalarAt(inv, r);
      for (int64_t j = 0; j < s.cols; ++j) {
        xhat[size_t(j)] = double(xr[j]) * rstd;
        dxhat[size_t(j)] = double(dyr[j]) * g[size_t(j)];
      }
      if (dx) {
        double m = laneSum(s.cols, [&](int64_t j) { return dxhat[size_t(j)] * xhat[size_t(j)]; }) / double(s.cols);
        T* d = dx->data<T>() + r * s.cols;
        for (int64_t j = 0; j < s.cols; ++j) d[j] = T(rstd * (dxhat[size_t(j)] - xhat[size_t(j)] * m));
      }
      for (size_t j = 0; j < acc_w.size(); ++j) acc_w[j] += double(dyr[j]) * xhat[j];
      for (size_t j = 0; j < acc_b.size(); ++j) acc_b[j] += double(dyr[j]);
    }
  });
  for (size_t j = 0; j < acc_w.size(); ++j) storeAt(*dw, int64_t(j), acc_w[j]);
  for (size_t j = 0; j < acc_b.size(); ++j) storeAt(*db, int64_t(j), acc_b[j]);
}

template <typename T> inline T sigmoidOf(T v) {
  if constexpr (std::is_same_v<T, float>) return sigmoid(v);
  else return T(1) / (T(1) + std::exp(-v));
}
// silu(v) = v sigmoid(v); its slope s (1 + v (1 - s)).
template <typename T> inline T siluSlope(T v) {
  T s = sigmoidOf(v);
  return s * (T(1) + v * (T(1) - s));
}

void silu(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireFloat(c, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  requireSameShape(c, "Out", out, "X", x);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) o[i] = xp[i] * sigmoidOf(xp[i]);
  });
}

void siluGrad(KernelContext& c) {
  pointwiseGrad(c, "X", [](auto x, auto g) { return g * siluSlope(x); });
}

// swiglu's operands as [rows, n]: a = x's gated part, b = the multiplier (y, or x's second half).
struct Gate {
  int64_t rows, n;
  bool split;  // no y: a and b are the halves of each row of x
};
Gate swigluGate(const KernelContext& c, const Tensor& x, const Tensor* y) {
  if (y) {
    requireSameStorage(c, "y", *y, "x", x);
    requireSameShape(c, "y", *y, "x", x);
    int64_t n = x.shape().empty() ? 1 : x.shape().back();
    return {n ? x.numel() / n : 0, n, false};
  }
  if (x.shape().empty() || x.shape().back() % 2 != 0)
    kernelFail(c, "with no y, x's last dim must be even: x is " + shapeStr(x.shape()));
  int64_t n = x.shape().back() / 2;
  return {n ? x.numel() / (2 * n) : 0, n, true};
}
std::vector<int64_t> gateShape(const Tensor& x, const Gate& g) {
  std::vector<int64_t> d = x.shape();
  if (g.split) d.back() = g.n;
  return d;
}

// swiglu: out = silu(a) * b.
void swiglu(KernelContext& c) {
  const Tensor& x = requireInput(c, "x");
  const Tensor* y = optionalInput(c, "y");
  Tensor& out = requireOutput(c, "out");
  requireFloat(c, "x", x);
  Gate gt = swigluGate(c, x, y);
  requireSameStorage(c, "out", out, "x", x);
  requireShape(c, "out", out, gateShape(x, gt), "silu(x) * y");
  dispatchFloat(c, "x", x, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r = 0; r < gt.rows; ++r) {
      const T* a = x.data<T>() + r * gt.n * (gt.split ? 2 : 1);
      const T* b = gt.split ? a + gt.n : y->data<T>() + r * gt.n;
      T* o = out.data<T>() + r * gt.n;
      for (int64_t j = 0; j < gt.n; ++j) o[j] = T(double(a[j]) * double(sigmoidOf(a[j])) * double(b[j]));
    }
  });
}

// swiglu_grad: da = dout * b * silu'(a), db = dout * silu(a); with no y both land in x@GRAD.
void swigluGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "x");
  const Tensor* y = optionalInput(c, "y");
  const Tensor& g = requireInput(c, "out@GRAD");
  Tensor* dx = optionalOutput(c, "x@GRAD");
  Tensor* dy = y ? optionalOutput(c, "y@GRAD") : nullptr;
  requireFloat(c, "x", x);
  Gate gt = swigluGate(c, x, y);
  requireSameStorage(c, "out@GRAD", g, "x", x);
  requireShape(c, "out@GRAD", g, gateShape(x, gt), "swiglu's out");
  if (dx) {
    requireSameStorage(c, "x@GRAD", *dx, "x", x);
    requireSameShape(c, "x@GRAD", *dx, "x", x);
  }
  if (dy) {
    requireSameStorage(c, "y@GRAD", *dy, "y", *y);
    requireSameShape(c, "y@GRAD", *dy, "y", *y);
  }
  dispatchFloat(c, "x", x, [&](auto tag) {
    using T = decltype(tag);
    int64_t stride = gt.n * (gt.split ? 2 : 1);
    for (int64_t r = 0; r < gt.rows; ++r) {
      const T* a = x.data<T>() + r * stride;
      const T* b = gt.split ? a + gt.n : y->data<T>() + r * gt.n;
      const T* gr = g.data<T>() + r * gt.n;
      T* da = dx ? dx->data<T>() + r * stride : nullptr;
      T* db = gt.split ? (da ? da + gt.n : nullptr) : dy ? dy->data<T>() + r * gt.n : nullptr;
      for (int64_t j = 0; j < gt.n; ++j) {
        double av = double(a[j]), s = 1.0 / (1.0 + std::exp(-av));
        if (da) da[j] = T(double(gr[j]) * double(b[j]) * s * (1.0 + av * (1.0 - s)));
        if (db) db[j] = T(double(gr[j]) * av * s);
      }
    }
  });
}

// Rotary embedding, per (batch, seq, head) vector v of head_dim d: out[j] = v[j] cos[j] +
// sign(j) v[partner(j)] sin[j], the rows of sin/cos picked by position_ids[batch, seq] (else seq).
// Paddle's use_neox_rotary_style = true pairs neighbours (partner(2i) = 2i+1, sign -1; partner(2i+1)
// = 2i, +1); false pairs the halves (partner(i) = i + d/2, sign -1, for i < d/2; i - d/2, +1, past
// it), as Llama does. The grad is the transpose: dv[j] = g[j] cos[j] + sign(p) g[p] sin[p], p =
// partner(j) (Paddle's kernel negates sin instead, the same when sin[j] = sin[partner(j)]).
struct RopeGeometry {
  int64_t batch, seq, heads, dim, rows;  // rows: sin/cos rows
  bool time_major, neox;
};

RopeGeometry ropeGeometry(const KernelContext& c, const Tensor& first, const Tensor& sin, const Tensor& cos, const Tensor* pos) {
  if (first.shape().size() != 4 || first.shape()[3] % 2 != 0)
    kernelFail(c, "q " + shapeStr(first.shape()) + " should be [batch, seq, heads, head_dim] with an even head_dim");
  RopeGeometry g{};
  g.time_major = boolAttr(c, "time_major", false);
  g.neox = boolAttr(c, "use_neox_rotary_style", true);
  g.batch = first.shape()[g.time_major ? 1 : 0];
  g.seq = first.shape()[g.time_major ? 0 : 1];
  g.heads = first.shape()[2];
  g.dim = first.shape()[3];
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"sin", &sin}, {"cos", &cos}}) {
    requireSameStorage(c, name, *t, "q", first);
    const auto& s = t->shape();
    bool ok = (s.size() == 2 || (s.size() == 4 && s[0] == 1 && s[2] == 1)) && s.back() == g.dim;
    if (!ok)
      kernelFail(c, std::string(name) + " " + shapeStr(s) + " should be [seq, head_dim] or [1, seq, 1, head_dim], head_dim " +
                        std::to_string(g.dim));
  }
  if (sin.shape() != cos.shape()) kernelFail(c, "sin " + shapeStr(sin.shape()) + " and cos " + shapeStr(cos.shape()) + " differ");
  g.rows = sin.numel() / g.dim;
  if (pos) {
    if (pos->storage() != Storage::I64) kernelFail(c, "position_ids is not an integer tensor");
    requireShape(c, "position_ids", *pos, {g.batch, g.seq}, "[batch, seq]");
    for (int64_t i = 0; i < pos->numel(); ++i)
      if (int64_t p = pos->data<int64_t>()[i]; p < 0 || p >= g.rows)
        kernelFail(c, "position_ids holds " + std::to_string(p) + ", outside the " + std::to_string(g.rows) + " rows of sin and cos");
  } else if (g.rows != g.seq) {
    kernelFail(c, "sin and cos hold " + std::to_string(g.rows) + " rows but seq is " + std::to_string(g.seq) + " (and no position_ids)");
  }
  return g;
}

template <typename T>
void rotate(const RopeGeometry& g, const T* in, T* out, const T* sin, const T* cos, const Tensor* pos, int64_t heads, bool transpose) {
  int64_t half = g.dim / 2;
  auto partner = [&](int64_t j) { return g.neox ? (j ^ 1) : (j < half ? j + half : j - half); };
  auto sign = [&](int64_t j) { return (g.neox ? (j % 2 == 0) : (j < half)) ? -1.0 : 1.0; };
  for (int64_t a = 0; a < (g.time_major ? g.seq : g.batch); ++a)
    for (int64_t b = 0; b < (g.time_major ? g.batch : g.seq); ++b) {
      int64_t bi = g.time_major ? b : a, si = g.time_major ? a : b;
      int64_t row = pos ? pos->data<int64_t>()[bi * g.seq + si] : si;
      const T *sr = sin + row * g.dim, *cr = cos + row * g.dim;
      for (int64_t h = 0; h < heads; ++h) {
        int64_t base = ((a * (g.time_major ? g.batch : g.seq) + b) * heads + h) * g.dim;
        const T* v = in + base;
        T* o = out + base;
        for (int64_t j = 0; j < g.dim; ++j) {
          int64_t p = partner(j);
          double r = transpose ? double(v[j]) * double(cr[j]) + sign(p) * double(v[p]) * double(sr[p])
                               : double(v[j]) * double(cr[j]) + sign(j) * double(v[p]) * double(sr[j]);
          o[j] = T(r);
        }
      }
    }
}

void rope(KernelContext& c, bool grad) {
  static constexpr const char* kIn[3] = {"q", "k", "v"};
  static constexpr const char* kInGrad[3] = {"out_q@GRAD", "out_k@GRAD", "out_v@GRAD"};
  static constexpr const char* kOut[3] = {"out_q", "out_k", "out_v"};
  static constexpr const char* kOutGrad[3] = {"q@GRAD", "k@GRAD", "v@GRAD"};
  const char* const* ins = grad ? kInGrad : kIn;
  const char* const* outs = grad ? kOutGrad : kOut;
  const Tensor* sin = optionalInput(c, "sin");
  const Tensor* cos = optionalInput(c, "cos");
  if (!sin || !cos) kernelFail(c, "needs sin and cos (computing them from rotary_emb_base is not supported)");
  const Tensor& first = requireInput(c, ins[0]);
  requireFloat(c, ins[0], first);
  const Tensor* pos = optionalInput(c, "position_ids");
  RopeGeometry g = ropeGeometry(c, first, *sin, *cos, pos);
  for (int i = 0; i < 3; ++i) {
    const Tensor* t = optionalInput(c, ins[i]);
    Tensor* o = optionalOutput(c, outs[i]);
    if (!t) {
      if (o) kernelFail(c, std::string("has ") + outs[i] + " but no " + ins[i]);
      continue;
    }
    if (!o) continue;
    requireSameStorage(c, ins[i], *t, ins[0], first);
    if (t->shape().size() != 4 || t->shape()[0] != first.shape()[0] || t->shape()[1] != first.shape()[1] || t->shape()[3] != g.dim)
      kernelFail(c, std::string(ins[i]) + " " + shapeStr(t->shape()) + " differs from " + ins[0] + " " + shapeStr(first.shape()) +
                        " outside the heads dim");
    requireSameStorage(c, outs[i], *o, ins[i], *t);
    requireSameShape(c, outs[i], *o, ins[i], *t);
    if (o->raw() == t->raw() && t->numel()) kernelFail(c, std::string(outs[i]) + " may not share " + ins[i] + "'s buffer");
    dispatchFloat(c, ins[i], *t, [&](auto tag) {
      using T = decltype(tag);
      rotate<T>(g, t->data<T>(), o->data<T>(), sin->data<T>(), cos->data<T>(), pos, t->shape()[2], grad);
    });
  }
}
void ropeForward(KernelContext& c) { rope(c, false); }
void ropeGrad(KernelContext& c) { rope(c, true); }

}  // namespace

void registerLlamaKernels(KernelTable& t) {
  t.add("rms_norm", rmsNorm);
  t.add("rms_norm_grad", rmsNormGrad);
  t.add("silu", silu);
  t.add("silu_grad", siluGrad);
  t.add("swiglu", swiglu);
  t.add("swiglu_grad", swigluGrad);
  t.add("fused_rotary_position_embedding", ropeForward);
  t.add("fused_rotary_position_embedding_grad", ropeGrad);
}

}  // namespace spopt::rt
