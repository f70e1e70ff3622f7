// elementwise_add / mul / div / max / min and their gradients, with Paddle's axis broadcasting.
// A gradient of a broadcast operand sums Out@GRAD over the broadcast dims; that sum accumulates in
// double, so a float32 bias gradient over many rows does not drift with the row count.
#include <algorithm>
#include <vector>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

enum class Kind { Add, Mul, Div, Max, Min };

template <Kind K, typename T> inline T apply(T a, T b) {
  if constexpr (K == Kind::Add) return a + b;
  else if constexpr (K == Kind::Mul) return a * b;
  else if constexpr (K == Kind::Div) return a / b;
  else if constexpr (K == Kind::Max) return a > b ? a : b;
  else return a < b ? a : b;
}

template <Kind K> void forward(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  BroadcastPlan p = planBroadcast(c, x.shape(), y.shape(), intAttr(c, "axis", -1));
  requireShape(c, "Out", out, p.out_shape, "X and Y broadcast");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    p.forEachRun([&](int64_t ox, int64_t oy, int64_t oo, int64_t n, int64_t sx, int64_t sy) {
      const T* a = xp + ox;
      const T* b = yp + oy;
      T* o = op + oo;
      if (sx && sy)
        for (int64_t i = 0; i < n; ++i) o[i] = apply<K>(a[i], b[i]);
      else if (sx)
        for (int64_t i = 0; i < n; ++i) o[i] = apply<K>(a[i], b[0]);
      else if (sy)
        for (int64_t i = 0; i < n; ++i) o[i] = apply<K>(a[0], b[i]);
      else
        for (int64_t i = 0; i < n; ++i) o[i] = apply<K>(a[0], b[0]);
    });
  });
}

// grad of one operand: d[self] += g * (Mul ? other : 1), summed over self's broadcast dims.
// `self_is_x` selects which plan strides address the gradient and which the other operand.
template <Kind K, typename T>
void operandGrad(const BroadcastPlan& p, bool self_is_x, const T* g, const T* other, T* d, int64_t d_numel) {
  bool full = self_is_x ? p.x_full : p.y_full;
  if (full) {
    // No reduction: write each element once.
    p.forEachRun([&](int64_t ox, int64_t oy, int64_t oo, int64_t n, int64_t sx, int64_t sy) {
      int64_t os = self_is_x ? ox : oy, ot = self_is_x ? oy : ox, st = self_is_x ? sy : sx;
      T* dd = d + os;
      const T* gg = g + oo;
      if constexpr (K == Kind::Add) {
        std::copy(gg, gg + n, dd);
      } else {
        const T* b = other + ot;
        if (st)
          for (int64_t i = 0; i < n; ++i) dd[i] = gg[i] * b[i];
        else
          for (int64_t i = 0; i < n; ++i) dd[i] = gg[i] * b[0];
      }
    });
    return;
  }
  std::vector<double> acc(size_t(d_numel), 0.0);
  p.forEachRun([&](int64_t ox, int64_t oy, int64_t oo, int64_t n, int64_t sx, int64_t sy) {
    int64_t os = self_is_x ? ox : oy, ot = self_is_x ? oy : ox;
    int64_t ss = self_is_x ? sx : sy, st = self_is_x ? sy : sx;
    double* a = acc.data() + os;
    const T* gg = g + oo;
    // An add's gradient reads no operand: `other` may be null (no buffer), and no offset is taken.
    const T* b = K == Kind::Add ? nullptr : other + ot;
    if (ss) {
      if (K == Kind::Add)
        for (int64_t i = 0; i < n; ++i) a[i] += double(gg[i]);
      else if (st)
        for (int64_t i = 0; i < n; ++i) a[i] += double(gg[i]) * double(b[i]);
      else
        for (int64_t i = 0; i < n; ++i) a[i] += double(gg[i]) * double(b[0]);
    } else {
      if (K == Kind::Add)
        a[0] += laneSum(n, [&](int64_t i) { return double(gg[i]); });
      else if (st)
        a[0] += laneSum(n, [&](int64_t i) { return double(gg[i]) * double(b[i]); });
      else
        a[0] += laneSum(n, [&](int64_t i) { return double(gg[i]); }) * double(b[0]);
    }
  });
  for (int64_t i = 0; i < d_numel; ++i) d[i] = T(acc[size_t(i)]);
}

// A binary op's grad reading X, Y and Out@GRAD, checked: one storage, Out@GRAD shaped as X and Y
// broadcast, an operand grad asked for.
struct BinaryGrad {
  const Tensor &x, &y, &g;
  Tensor *dx, *dy;
  BroadcastPlan p;
};
BinaryGrad binaryGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dy = optionalOutput(c, "Y@GRAD");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out@GRAD", g, "X", x);
  BroadcastPlan p = planBroadcast(c, x.shape(), y.shape(), intAttr(c, "axis", -1));
  requireShape(c, "Out@GRAD", g, p.out_shape, "X and Y broadcast");
  requireOperandGrads(c, x, y, dx, dy);
  return {x, y, g, dx, dy, std::move(p)};
}

// Sums term(ix, iy, io) over every broadcast element into an operand's gradient (X's when
// `self_is_x`, else Y's), in double and in a fixed order.
template <typename T, typename Term>
void sumIntoOperand(const BroadcastPlan& p, bool self_is_x, T* d, int64_t d_numel, Term term) {
  std::vector<double> acc(size_t(d_numel), 0.0);
  p.forEachRun([&](int64_t ox, int64_t oy, int64_t oo, int64_t n, int64_t sx, int64_t sy) {
    int64_t os = self_is_x ? ox : oy, ss = self_is_x ? sx : sy;
    for (int64_t i = 0; i < n; ++i) acc[size_t(os + i * ss)] += term(ox + i * sx, oy + i * sy, oo + i);
  });
  for (int64_t i = 0; i < d_numel; ++i) d[i] = T(acc[size_t(i)]);
}

template <Kind K> void backward(KernelContext& c) {
  const BinaryGrad io = binaryGrad(c);
  dispatchFloat(c, "X", io.x, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = io.g.data<T>();
    if (io.dx) operandGrad<K, T>(io.p, true, gp, io.y.data<T>(), io.dx->data<T>(), io.dx->numel());
    if (io.dy) operandGrad<K, T>(io.p, false, gp, io.x.data<T>(), io.dy->data<T>(), io.dy->numel());
  });
}

// divide_grad: dX = dOut / Y, dY = -dOut * Out / Y (Paddle's form: Out, not X / Y, is read),
// each summed over its operand's broadcast dims in double.
void divideGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");  // its shape only
  const Tensor& y = requireInput(c, "Y");
  const Tensor& out = requireInput(c, "Out");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dy = optionalOutput(c, "Y@GRAD");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out", out, "Y", y);
  requireSameStorage(c, "Out@GRAD", g, "Y", y);
  BroadcastPlan p = planBroadcast(c, x.shape(), y.shape(), intAttr(c, "axis", -1));
  requireShape(c, "Out", out, p.out_shape, "X and Y broadcast");
  requireShape(c, "Out@GRAD", g, p.out_shape, "X and Y broadcast");
  requireOperandGrads(c, x, y, dx, dy);
  dispatchFloat(c, "Y", y, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    const T* yp = y.data<T>();
    const T* op = out.data<T>();
    if (dx)
      sumIntoOperand(p, true, dx->data<T>(), dx->numel(), [&](int64_t, int64_t iy, int64_t o) { return double(gp[o] / yp[iy]); });
    if (dy)
      sumIntoOperand(p, false, dy->data<T>(), dy->numel(),
                     [&](int64_t, int64_t iy, int64_t o) { return double(-gp[o] * op[o] / yp[iy]); });
  });
}

// maximum_grad / minimum_grad (Paddle's functors): the gradient goes to X where X wins strictly
// (x > y for max, x < y for min) and to Y otherwise, ties included; each summed over its
// operand's broadcast dims in double.
template <Kind K> void compareGrad(KernelContext& c) {
  const BinaryGrad io = binaryGrad(c);
  dispatchFloat(c, "X", io.x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = io.x.data<T>();
    const T* yp = io.y.data<T>();
    const T* gp = io.g.data<T>();
    auto x_wins = [](T a, T b) { return K == Kind::Max ? a > b : a < b; };
    auto share = [&](bool self_is_x) {
      return [&, self_is_x](int64_t ix, int64_t iy, int64_t o) { return x_wins(xp[ix], yp[iy]) == self_is_x ? double(gp[o]) : 0.0; };
    };
    if (io.dx) sumIntoOperand(io.p, true, io.dx->data<T>(), io.dx->numel(), share(true));
    if (io.dy) sumIntoOperand(io.p, false, io.dy->data<T>(), io.dy->numel(), share(false));
  });
}

}  // namespace

void registerElementwiseKernels(KernelTable& t) {
  t.add("add", forward<Kind::Add>);
  t.add("multiply", forward<Kind::Mul>);
  t.add("divide", forward<Kind::Div>);
  t.add("divide_grad", divideGrad);
  t.add("add_grad", backward<Kind::Add>);
  t.add("multiply_grad", backward<Kind::Mul>);
  t.add("maximum", forward<Kind::Max>);
  t.add("minimum", forward<Kind::Min>);
  t.add("maximum_grad", compareGrad<Kind::Max>);
  t.add("minimum_grad", compareGrad<Kind::Min>);
}

}  // namespace spopt::rt
