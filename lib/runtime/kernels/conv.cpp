// conv2d and pool2d (+ grads), NCHW. conv2d is conv_gemm.h's im2col + GEMM per image and group
// (OpenBLAS). The window (padding algorithm, dilations, ceil_mode, global and adaptive pooling)
// is ops/conv_geometry.h's, shared with the verifier's rules. Max pooling 3x3 / 2 (ResNet's stem) on float32 takes
// pool_3x3s2.cpp's loops forward, with the same bits.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "ops/conv_geometry.h"
#include "runtime/kernels/conv_gemm.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/pool_3x3s2.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

void requireNchw(const KernelContext& c, const Tensor& t, std::string_view name) {
  std::string f = stringAttr(c, "data_format", "NCHW");
  if (f != "NCHW" && f != "AnyLayout") kernelFail(c, "data_format " + f + " is not supported (NCHW only)");
  if (t.shape().size() != 4) kernelFail(c, std::string(name) + " " + shapeStr(t.shape()) + " should be 4-D (NCHW)");
}

Window2d window(const KernelContext& c, const Tensor& x, bool is_pool, std::vector<int64_t> filter_hw = {}) {
  WindowAttrs a;
  a.ksize = is_pool ? intsAttr(c, "ksize", {}) : std::move(filter_hw);
  a.strides = intsAttr(c, "strides", {1, 1});
  a.paddings = intsAttr(c, "paddings", {0, 0});
  a.dilations = intsAttr(c, "dilations", {1, 1});
  a.padding_algorithm = stringAttr(c, "padding_algorithm", "EXPLICIT");
  a.ceil_mode = boolAttr(c, "ceil_mode", false);
  a.global_pooling = boolAttr(c, "global_pooling", false);
  a.adaptive = boolAttr(c, "adaptive", false);
  std::string why;
  auto w = resolveWindow(x.shape()[2], x.shape()[3], a, is_pool, &why);
  if (!w) kernelFail(c, why);
  return *w;
}

// ---- conv2d ----

ConvShape convShape(const KernelContext& c, const Tensor& x, const Tensor& f, Window2d& win) {
  requireNchw(c, x, "Input");
  if (f.shape().size() != 4) kernelFail(c, "Filter " + shapeStr(f.shape()) + " should be 4-D");
  requireFloat(c, "Input", x);
  requireSameStorage(c, "Filter", f, "Input", x);
  int64_t groups = intAttr(c, "groups", 1);
  const auto &xs = x.shape(), &fs = f.shape();
  if (groups < 1 || fs[0] % groups || xs[1] != fs[1] * groups)
    kernelFail(c, "Input " + shapeStr(xs) + ", Filter " + shapeStr(fs) + " and groups " + std::to_string(groups) + " do not agree");
  win = window(c, x, false, {fs[2], fs[3]});
  return {xs[0], xs[1], xs[2], xs[3], fs[0], groups, fs[2], fs[3], win.h.out, win.w.out};
}

void conv2d(KernelContext& c) {
  const Tensor& x = requireInput(c, "Input");
  const Tensor& f = requireInput(c, "Filter");
  Tensor& y = requireOutput(c, "Output");
  Window2d w;
  ConvShape s = convShape(c, x, f, w);
  requireSameStorage(c, "Output", y, "Input", x);
  requireShape(c, "Output", y, {s.n, s.cout, s.oh, s.ow}, "the convolution of Input and Filter");
  dispatchFloat(c, "Input", x, [&](auto tag) {
    using T = decltype(tag);
    convForward(s, w, x.data<T>(), f.data<T>(), y.data<T>());
  });
}

void conv2dGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "Input");
  const Tensor& f = requireInput(c, "Filter");
  const Tensor& dy = requireInput(c, "Output@GRAD");
  Tensor* dx = optionalOutput(c, "Input@GRAD");
  Tensor* df = optionalOutput(c, "Filter@GRAD");
  Window2d w;
  ConvShape s = convShape(c, x, f, w);
  requireSameStorage(c, "Output@GRAD", dy, "Input", x);
  requireShape(c, "Output@GRAD", dy, {s.n, s.cout, s.oh, s.ow}, "the convolution of Input and Filter");
  requireGradLike(c, "Input@GRAD", dx, "Input", x);
  requireGradLike(c, "Filter@GRAD", df, "Filter", f);
  dispatchFloat(c, "Input", x, [&](auto tag) {
    using T = decltype(tag);
    if (df) convFilterGrad(s, w, x.data<T>(), dy.data<T>(), df->data<T>());
    if (dx) convInputGrad(s, w, f.data<T>(), dy.data<T>(), dx->data<T>());
  });
}

// ---- pool2d ----

// The input range a window reads along one dim (padding excluded), as Paddle's CPU pooling
// computes it: adaptive windows, else [o * stride - pad, + k) clipped to the input.
struct Span {
  int64_t begin, end;
};
Span span(const WindowDim& d, int64_t o, bool adaptive) {
  if (adaptive) return {adaptiveStart(o, d.in, d.out), adaptiveEnd(o, d.in, d.out)};
  int64_t b = o * d.stride - d.pad_before;
  return {std::max<int64_t>(b, 0), std::min(b + d.k, d.in)};
}

struct PoolShape {
  Window2d w;
  int64_t planes;  // N * C
  bool max, exclusive, adaptive;
};

PoolShape poolShape(const KernelContext& c, const Tensor& x) {
  requireNchw(c, x, "X");
  requireFloat(c, "X", x);
  std::string type = stringAttr(c, "pooling_type", "max");
  if (type != "max" && type != "avg") kernelFail(c, "pooling_type \"" + type + "\" is neither max nor avg");
  PoolShape p{window(c, x, true), x.shape()[0] * x.shape()[1], type == "max", boolAttr(c, "exclusive", true),
              boolAttr(c, "adaptive", false)};
  return p;
}

// The windows of one output row (oy) or column (ox): spans and, for avg, the divisor's factor.
std::vector<Span> spans(const WindowDim& d, bool adaptive) {
  std::vector<Span> out(size_t(d.out));
  for (int64_t o = 0; o < d.out; ++o) out[size_t(o)] = span(d, o, adaptive);
  return out;
}

// max: the window's maximum (exact in T: no wider type needed); avg: the sum in double, in
// row-major order, over the divisor. Max is a template parameter so the inner loops have no branch.
template <bool Max, typename T> struct PoolAcc {
  using Acc = std::conditional_t<Max, T, double>;
  static Acc init() { return Max ? Acc(-std::numeric_limits<T>::infinity()) : Acc(0); }
  static void add(Acc& a, T v) {
    if constexpr (Max) a = std::max(a, v);
    else a += double(v);
  }
  static T result(Acc a, int64_t divisor) {
    if constexpr (Max) return a;
    else return T(divisor > 0 ? a / double(divisor) : 0.0);
  }
};

// The output columns whose window lies wholly inside the row, [lo, hi) (none when adaptive).
std::pair<int64_t, int64_t> innerColumns(const WindowDim& d, bool adaptive) {
  int64_t lo = 0, hi = 0;
  if (adaptive) return {0, 0};
  while (lo < d.out && lo * d.stride - d.pad_before < 0) ++lo;
  hi = lo;
  while (hi < d.out && hi * d.stride - d.pad_before + d.k <= d.in) ++hi;
  return {lo, hi};
}

// Reads n elements of `row`, `sx` apart, as one loop per window offset: the stride a compile-time
// constant where it is 1 or 2 (a ResNet pool's), so the loads vectorise (a runtime stride made them
// one-lane inserts: 3x the memory bound).
template <int S, typename Op> void stridedRow(int64_t n, int64_t sx, Op&& op) {
  const int64_t step = S > 0 ? S : sx;
  for (int64_t i = 0; i < n; ++i) op(i, i * step);
}
template <typename Op> void byStride(int64_t n, int64_t sx, Op&& op) {
  if (sx == 1) stridedRow<1>(n, sx, op);
  else if (sx == 2) stridedRow<2>(n, sx, op);
  else stridedRow<0>(n, sx, op);
}

// The clipped windows of an output row one by one, in row-major order.
template <bool Max, typename T> struct PoolEdges {
  const PoolShape& p;
  const std::vector<Span>& xs;
  int64_t divisor(Span y, Span xw) const {
    int64_t area = (y.end - y.begin) * (xw.end - xw.begin);
    return p.exclusive || p.adaptive ? area : p.w.h.k * p.w.w.k;
  }
  void one(const T* in, Span y, int64_t ox, T* o) const {
    using A = PoolAcc<Max, T>;
    const Span xw = xs[size_t(ox)];
    typename A::Acc a = A::init();
    for (int64_t iy = y.begin; iy < y.end; ++iy)
      for (int64_t ix = xw.begin; ix < xw.end; ++ix) A::add(a, in[iy * p.w.w.in + ix]);
    o[ox] = A::result(a, divisor(y, xw));
  }
};

// Max of the inner windows: each input row's window maxima (its columns in window order) once,
// kept for the output rows that share the row, then the rows' maxima in row order. The max
// keeps the first of equal values (std::max), so grouping a window's row-major sequence by rows
// gives the same bits as the one sequence, signed zeros included; NaN is skipped either way.
template <typename T> class RowMaxima {
 public:
  RowMaxima(const WindowDim& h, int64_t n) : n_(n), slots_(std::max<int64_t>(h.k, 1)), buf_(size_t(slots_ * n)), row_(size_t(slots_), -1) {}
  void newPlane() { std::fill(row_.begin(), row_.end(), -1); }
  const T* of(const T* in, const WindowDim& w, int64_t first, int64_t iy) {
    const size_t slot = size_t(iy % slots_);
    T* m = buf_.data() + slot * size_t(n_);
    if (row_[slot] == iy) return m;
    row_[slot] = iy;
    std::fill(m, m + n_, -std::numeric_limits<T>::infinity());
    for (int64_t dx = 0; dx < w.k; ++dx) {
      const T* r = in + iy * w.in + first + dx;
      byStride(n_, w.stride, [&](int64_t i, int64_t at) { m[i] = std::max(m[i], r[at]); });
    }
    return m;
  }

 private:
  int64_t n_, slots_;
  std::vector<T> buf_;
  std::vector<int64_t> row_;  // the input row each slot holds
};

template <bool Max, typename T> void poolPlanes(const PoolShape& p, const T* x, T* out) {
  using A = PoolAcc<Max, T>;
  const WindowDim &h = p.w.h, &w = p.w.w;
  const int64_t in_plane = h.in * w.in, out_plane = h.out * w.out;
  const std::vector<Span> ys = spans(h, p.adaptive), xs = spans(w, p.adaptive);
  const auto [lo, hi] = innerColumns(w, p.adaptive);
  const int64_t n = std::max<int64_t>(hi - lo, 0), first = lo * w.stride - w.pad_before;
  const PoolEdges<Max, T> edges{p, xs};
  RowMaxima<T> maxima(h, Max ? n : 0);
  std::vector<typename A::Acc> acc(static_cast<size_t>(n));
  for (int64_t pl = 0; pl < p.planes; ++pl) {
    const T* in = x + pl * in_plane;
    maxima.newPlane();
    for (int64_t oy = 0; oy < h.out; ++oy) {
      const Span y = ys[size_t(oy)];
      T* o = out + pl * out_plane + oy * w.out;
      for (int64_t ox = 0; ox < lo; ++ox) edges.one(in, y, ox, o);
      for (int64_t ox = std::max(hi, lo); ox < w.out; ++ox) edges.one(in, y, ox, o);
      if (n == 0) continue;
      if constexpr (Max) {
        std::fill(o + lo, o + hi, -std::numeric_limits<T>::infinity());
        for (int64_t iy = y.begin; iy < y.end; ++iy) {
          const T* m = maxima.of(in, w, first, iy);
          T* dst = o + lo;
          for (int64_t i = 0; i < n; ++i) dst[i] = std::max(dst[i], m[i]);
        }
      } else {
        // avg: the sum in double in row-major order, as the windows one by one.
        std::fill(acc.begin(), acc.end(), A::init());
        typename A::Acc* a = acc.data();
        for (int64_t iy = y.begin; iy < y.end; ++iy)
          for (int64_t dx = 0; dx < w.k; ++dx) {
            const T* r = in + iy * w.in + first + dx;
            byStride(n, w.stride, [&](int64_t i, int64_t at) { A::add(a[i], r[at]); });
          }
        const int64_t divisor = edges.divisor(y, xs[size_t(lo)]);
        for (int64_t i = 0; i < n; ++i) o[lo + i] = A::result(acc[size_t(i)], divisor);
      }
    }
  }
}

void pool2d(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  PoolShape p = poolShape(c, x);
  requireSameStorage(c, "Out", out, "X", x);
  requireShape(c, "Out", out, {x.shape()[0], x.shape()[1], p.w.h.out, p.w.w.out}, "X pooled");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>)
      if (p.max && !p.adaptive && isMax3x3Stride2(p.w)) return maxPool3x3Stride2(p.w, p.planes, x.data<T>(), out.data<T>());
    if (p.max) poolPlanes<true>(p, x.data<T>(), out.data<T>());
    else poolPlanes<false>(p, x.data<T>(), out.data<T>());
  });
}

// avg: each input of a window gets Out@GRAD / divisor; max: the first input equal to the
// window's maximum gets all of it (as Paddle's CPU kernel). Outputs add into dx in the same order
// as always, window by window (windows overlap: float sums depend on it). For the max windows
// inside a row, where each one's element lies is found first for the whole row, without a branch
// per compare (which one holds the maximum is data: the branch missed ~half the time), as one
// loop over the row per window offset; then the adds run in order.
template <typename T> struct MaxGradRow {
  std::vector<int64_t> at;  // per inner column: the input index its Out@GRAD goes to, or -1

  // Fills `at` for columns [lo, lo + n) of an output row whose window rows are y.
  void locate(const PoolShape& p, const T* in, const T* out_row, Span y, int64_t lo, int64_t n) {
    const WindowDim& w = p.w.w;
    const int64_t first = lo * w.stride - w.pad_before;
    at.assign(size_t(n), -1);
    int64_t* a = at.data();
    const T* m = out_row + lo;
    // Scanned last to first: the last hit written is the first element in row-major order.
    for (int64_t iy = y.end; iy-- > y.begin;)
      for (int64_t dx = w.k; dx-- > 0;) {
        const int64_t base = iy * w.in + first + dx;
        const T* r = in + base;
        byStride(n, w.stride, [&](int64_t i, int64_t off) { a[i] = r[off] == m[i] ? base + off : a[i]; });
      }
  }
};

// X@GRAD's rows are zeroed just before the first window that reaches them (rows in cache, not a
// pass of its own over X@GRAD); the adds into each start from zero as before.
template <typename T> struct LazyZero {
  T* d;
  int64_t width, done = 0;
  void upTo(int64_t row) {
    if (row > done) std::fill(d + done * width, d + row * width, T(0));
    done = std::max(done, row);
  }
};

template <bool Max, typename T> void poolGradPlanes(const PoolShape& p, const T* x, const T* out, const T* dy, T* dx) {
  const WindowDim &h = p.w.h, &w = p.w.w;
  const int64_t in_w = w.in, in_plane = h.in * in_w, out_plane = h.out * w.out;
  const std::vector<Span> ys = spans(h, p.adaptive), xs = spans(w, p.adaptive);
  auto [lo, hi] = innerColumns(w, p.adaptive);
  if (!Max) lo = hi = 0;
  MaxGradRow<T> inner;
  for (int64_t pl = 0; pl < p.planes; ++pl) {
    const T* in = x + pl * in_plane;
    T* d = dx + pl * in_plane;
    LazyZero<T> zero{d, in_w};
    for (int64_t oy = 0; oy < h.out; ++oy) {
      const Span y = ys[size_t(oy)];
      zero.upTo(y.end);
      const int64_t row = pl * out_plane + oy * w.out;
      auto one = [&](int64_t ox) {
        const Span xw = xs[size_t(ox)];
        const T g = dy[row + ox];
        if constexpr (Max) {
          const T m = out[row + ox];
          for (int64_t iy = y.begin; iy < y.end; ++iy)
            for (int64_t ix = xw.begin; ix < xw.end; ++ix)
              if (in[iy * in_w + ix] == m) {
                d[iy * in_w + ix] += g;
                return;
              }
        } else {
          int64_t area = (y.end - y.begin) * (xw.end - xw.begin);
          int64_t divisor = p.exclusive || p.adaptive ? area : h.k * w.k;
          if (divisor <= 0) return;
          T share = T(double(g) / double(divisor));
          for (int64_t iy = y.begin; iy < y.end; ++iy)
            for (int64_t ix = xw.begin; ix < xw.end; ++ix) d[iy * in_w + ix] += share;
        }
      };
      for (int64_t ox = 0; ox < lo; ++ox) one(ox);
      if (Max && hi > lo) {
        inner.locate(p, in, out + row, y, lo, hi - lo);
        for (int64_t i = 0; i < hi - lo; ++i)
          if (int64_t at = inner.at[size_t(i)]; at >= 0) d[at] += dy[row + lo + i];
      }
      for (int64_t ox = std::max(lo, hi); ox < w.out; ++ox) one(ox);
    }
    zero.upTo(h.in);
  }
}

void pool2dGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& dy = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  PoolShape p = poolShape(c, x);
  const Tensor* out = p.max ? &requireInput(c, "Out") : nullptr;
  std::vector<int64_t> out_shape = {x.shape()[0], x.shape()[1], p.w.h.out, p.w.w.out};
  requireSameStorage(c, "Out@GRAD", dy, "X", x);
  requireShape(c, "Out@GRAD", dy, out_shape, "X pooled");
  if (out) {
    requireSameStorage(c, "Out", *out, "X", x);
    requireShape(c, "Out", *out, out_shape, "X pooled");
  }
  requireSameStorage(c, "X@GRAD", dx, "X", x);
  requireShape(c, "X@GRAD", dx, x.shape(), "X's shape");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>)
      if (p.max && !p.adaptive && isMax3x3Stride2(p.w))
        return maxPoolGrad3x3Stride2(p.w, p.planes, x.data<T>(), out->data<T>(), dy.data<T>(), dx.data<T>());
    if (p.max) poolGradPlanes<true>(p, x.data<T>(), out->data<T>(), dy.data<T>(), dx.data<T>());
    else poolGradPlanes<false>(p, x.data<T>(), static_cast<const T*>(nullptr), dy.data<T>(), dx.data<T>());
  });
}

}  // namespace

void registerConvKernels(KernelTable& t) {
  t.add("conv2d", conv2d);
  t.add("conv2d_grad", conv2dGrad);
  t.add("depthwise_conv2d", conv2d);  // conv2d with groups = channels (ops/vision_ops.cpp)
  t.add("depthwise_conv2d_grad", conv2dGrad);
  t.add("pool2d", pool2d);
  t.add("pool2d_grad", pool2dGrad);
}

}  // namespace spopt::rt
