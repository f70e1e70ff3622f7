// Reductions: reduce_sum, reduce_mean, mean (with grads) and sum (gradient accumulation).
// A reduction is the broadcast of its keep_dim result over X read backwards, so it walks X with a
// BroadcastPlan of (X, X with 1s at the reduced dims); sums accumulate in double.
#include <algorithm>
#include <vector>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

using Dims = std::vector<int64_t>;

struct ReduceSpec {
  Dims kept;      // X's shape with 1s at the reduced dims (keep_dim form)
  Dims out;       // the declared form: kept, or kept without the reduced dims
  int64_t count;  // elements summed into each output
};

ReduceSpec reduceSpec(const KernelContext& c, const Dims& x, bool all_by_op) {
  bool all = all_by_op || boolAttr(c, "reduce_all", false);
  Dims dims = all_by_op ? Dims{} : intsAttr(c, "dim", {0});
  if (dims.empty() || x.empty()) all = true;
  bool keep = !all_by_op && boolAttr(c, "keep_dim", false);
  std::vector<bool> reduced(x.size(), all);
  for (int64_t d : dims)
    if (!all) reduced[size_t(normaliseAxis(c, d, x.size(), "dim"))] = true;
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

// Out may be declared [1] for a result that reduced every dim (older Paddle) or [] (newer).
void requireReducedShape(const KernelContext& c, std::string_view name, const Tensor& t, const ReduceSpec& s) {
  if (s.out.empty() && t.shape() == Dims{1}) return;
  requireShape(c, name, t, s.out, "X reduced");
}

void reduceForward(KernelContext& c, bool mean, bool all_by_op) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireFloat(c, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  ReduceSpec s = reduceSpec(c, x.shape(), all_by_op);
  requireReducedShape(c, "Out", out, s);
  BroadcastPlan p = planBroadcast(c, x.shape(), s.kept, -1);
  double inv = mean ? 1.0 / double(s.count) : 1.0;
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    std::vector<double> acc(size_t(out.numel()), 0.0);
    p.forEachRun([&](int64_t ox, int64_t oy, int64_t, int64_t n, int64_t, int64_t sy) {
      const T* a = xp + ox;
      double* r = acc.data() + oy;
      if (sy) {
        for (int64_t i = 0; i < n; ++i) r[i] += double(a[i]);
      } else {
        r[0] += laneSum(n, [&](int64_t i) { return double(a[i]); });
      }
    });
    T* o = out.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) o[i] = T(acc[i] * inv);
  });
}

// dX = dOut broadcast back over the reduced dims (divided by the count for a mean).
void reduceBackward(KernelContext& c, bool mean, bool all_by_op) {
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireFloat(c, "Out@GRAD", g);
  requireSameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  if (const Tensor* x = optionalInput(c, "X")) requireShape(c, "X@GRAD", dx, x->shape(), "the shape of X");
  ReduceSpec s = reduceSpec(c, dx.shape(), all_by_op);
  requireReducedShape(c, "Out@GRAD", g, s);
  BroadcastPlan p = planBroadcast(c, dx.shape(), s.kept, -1);
  double scale = mean ? 1.0 / double(s.count) : 1.0;
  dispatchFloat(c, "Out@GRAD", g, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    T* d = dx.data<T>();
    p.forEachRun([&](int64_t ox, int64_t oy, int64_t, int64_t n, int64_t, int64_t sy) {
      T* a = d + ox;
      const T* r = gp + oy;
      if (sy)
        for (int64_t i = 0; i < n; ++i) a[i] = T(double(r[i]) * scale);
      else
        std::fill(a, a + n, T(double(r[0]) * scale));
    });
  });
}

// sum: Out = X[0] + ... + X[n-1], per element in double; safe when Out aliases an input
// (each chunk is read completely before it is written).
void sumOp(KernelContext& c) {
  size_t n_in = c.io.inputCount("X");
  if (n_in == 0) kernelFail(c, "has no X");
  Tensor& out = requireOutput(c, "Out");
  requireFloat(c, "Out", out);
  std::vector<const Tensor*> xs;
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor& xi = requireInput(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    requireSameStorage(c, name, xi, "Out", out);
    requireSameShape(c, name, xi, "Out", out);
    xs.push_back(&xi);
  }
  dispatchFloat(c, "Out", out, [&](auto tag) {
    using T = decltype(tag);
    constexpr int64_t kChunk = 2048;
    double acc[kChunk];
    T* o = out.data<T>();
    for (int64_t base = 0, total = out.numel(); base < total; base += kChunk) {
      int64_t n = std::min(kChunk, total - base);
      const T* x0 = xs[0]->data<T>() + base;
      for (int64_t i = 0; i < n; ++i) acc[i] = double(x0[i]);
      for (size_t k = 1; k < xs.size(); ++k) {
        const T* xk = xs[k]->data<T>() + base;
        for (int64_t i = 0; i < n; ++i) acc[i] += double(xk[i]);
      }
      for (int64_t i = 0; i < n; ++i) o[base + i] = T(acc[i]);
    }
  });
}

}  // namespace

void registerReduceKernels(KernelTable& t) {
  t.add("sum", [](KernelContext& c) { reduceForward(c, false, false); });
  t.add("mean", [](KernelContext& c) { reduceForward(c, true, false); });
  t.add("mean_all", [](KernelContext& c) { reduceForward(c, true, true); });
  t.add("sum_grad", [](KernelContext& c) { reduceBackward(c, false, false); });
  t.add("mean_grad", [](KernelContext& c) { reduceBackward(c, true, false); });
  t.add("mean_all_grad", [](KernelContext& c) { reduceBackward(c, true, true); });
  t.add("add_n", sumOp);
}

}  // namespace spopt::rt
