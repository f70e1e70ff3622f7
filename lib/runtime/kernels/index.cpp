// Masks and gathers: tril_triu (and PIR's tril / triu), where (+ grad), full_like, gather_nd (+
// grad). Selection and copies run on every storage; the gradient sums are formed in double in a
// fixed order (index order), so they are deterministic.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/index_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// Keeps the lower (j - i <= diagonal) or upper (j - i >= diagonal) triangle of each matrix in the
// last two dims and zeroes the rest; Out may be X's buffer (PIR's tril_).
void triangle(KernelContext& c, bool lower) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "X", x);
  requireSameShape(c, "Out", out, "X", x);
  if (x.shape().size() < 2) kernelFail(c, "X " + shapeStr(x.shape()) + " should have at least 2 dims");
  int64_t diag = intAttr(c, "diagonal", 0);
  size_t r = x.shape().size();
  int64_t rows = x.shape()[r - 2], cols = x.shape()[r - 1], mats = product(x.shape(), 0, r - 2);
  size_t elem = storageSize(x.storage());
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  std::byte* dst = static_cast<std::byte*>(out.raw());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      size_t at = size_t((m * rows + i) * cols) * elem;
      // the kept columns [lo, hi)
      int64_t lo = lower ? 0 : std::clamp<int64_t>(i + diag, 0, cols), hi = lower ? std::clamp<int64_t>(i + diag + 1, 0, cols) : cols;
      if (src != dst && hi > lo) std::memcpy(dst + at + size_t(lo) * elem, src + at + size_t(lo) * elem, size_t(hi - lo) * elem);
      if (lo > 0) std::memset(dst + at, 0, size_t(lo) * elem);
      if (hi < cols) std::memset(dst + at + size_t(hi) * elem, 0, size_t(cols - hi) * elem);
    }
}
void trilTriu(KernelContext& c) { triangle(c, boolAttr(c, "lower", false)); }
void tril(KernelContext& c) { triangle(c, true); }
void triu(KernelContext& c) { triangle(c, false); }

const Tensor& condition(const KernelContext& c, const Tensor& x) {
  const Tensor& cond = requireInput(c, "Condition");
  if (cond.storage() != Storage::U8) kernelFail(c, "Condition is not a bool tensor");
  requireSameShape(c, "Condition", cond, "X", x);
  return cond;
}

// where: Out = Condition ? X : Y, all of one shape.
void where(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  Tensor& out = requireOutput(c, "Out");
  const Tensor& cond = condition(c, x);
  requireSameStorage(c, "Y", y, "X", x);
  requireSameShape(c, "Y", y, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  requireSameShape(c, "Out", out, "X", x);
  const uint8_t* cp = cond.data<uint8_t>();
  dispatchStorage(x, [&](auto tag) {
    using T = decltype(tag);
    const T *xp = x.data<T>(), *yp = y.data<T>();
    T* o = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) o[i] = cp[i] ? xp[i] : yp[i];
  });
}

// where_grad: X@GRAD = Condition ? Out@GRAD : 0, Y@GRAD = Condition ? 0 : Out@GRAD.
void whereGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& g = requireInput(c, "Out@GRAD");
  const Tensor& cond = condition(c, x);
  requireSameShape(c, "Out@GRAD", g, "X", x);
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dy = optionalOutput(c, "Y@GRAD");
  for (auto [name, t] : {std::pair<const char*, Tensor*>{"X@GRAD", dx}, {"Y@GRAD", dy}})
    if (t) {
      requireSameStorage(c, name, *t, "Out@GRAD", g);
      requireSameShape(c, name, *t, "X", x);
    }
  const uint8_t* cp = cond.data<uint8_t>();
  dispatchStorage(g, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    T* a = dx ? dx->data<T>() : nullptr;
    T* b = dy ? dy->data<T>() : nullptr;
    for (int64_t i = 0, n = g.numel(); i < n; ++i) {
      if (a) a[i] = cp[i] ? gp[i] : T(0);
      if (b) b[i] = cp[i] ? T(0) : gp[i];
    }
  });
}

// full_like (fill_any_like): Out, shaped like X, holds `value` in Out's own dtype.
void fullLike(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireShape(c, "Out", out, x.shape(), "X's shape");
  double v = floatAttr(c, "value", 0.0);
  dispatchStorage(out, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(out.data<T>(), out.numel(), T(v));
  });
}

// gather_nd's geometry: `count` tuples of k indices, each naming a block of `block` elements of X.
struct Gather {
  int64_t count, k, block;
  std::vector<int64_t> offsets;  // each tuple's first element in X
};

Gather gatherGeometry(const KernelContext& c, const Tensor& x, const Tensor& index, std::string_view out_name, const Tensor& out) {
  if (index.storage() != Storage::I64) kernelFail(c, "Index is not an integer tensor");
  std::string why;
  auto want = resolveGatherNd(x.shape(), index.shape(), &why);  // shared with the verifier
  if (!want) kernelFail(c, why);
  requireShape(c, out_name, out, *want, "Index's leading dims, then X's after k");
  Gather g{};
  g.k = index.shape().back();
  g.count = g.k ? index.numel() / g.k : product(index.shape(), 0, index.shape().size() - 1);
  g.block = product(x.shape(), size_t(g.k));
  const int64_t* ip = index.data<int64_t>();
  g.offsets.resize(size_t(g.count));
  for (int64_t t = 0; t < g.count; ++t) {
    int64_t off = 0;
    for (int64_t d = 0; d < g.k; ++d) {
      int64_t v = ip[t * g.k + d], dim = x.shape()[size_t(d)];
      if (v < 0 || v >= dim)
        kernelFail(c, "Index holds " + std::to_string(v) + " for dim " + std::to_string(d) + " of X " + shapeStr(x.shape()));
      off = off * dim + v;
    }
    g.offsets[size_t(t)] = off * g.block;
  }
  return g;
}

void gatherNd(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& index = requireInput(c, "Index");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "X", x);
  Gather g = gatherGeometry(c, x, index, "Out", out);
  size_t elem = storageSize(x.storage()), bytes = size_t(g.block) * elem;
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  std::byte* dst = static_cast<std::byte*>(out.raw());
  for (int64_t t = 0; t < g.count && bytes; ++t) std::memcpy(dst + size_t(t) * bytes, src + size_t(g.offsets[size_t(t)]) * elem, bytes);
}

// gather_nd_grad: X@GRAD is zero but for the gathered blocks, which sum their Out@GRAD blocks (a
// block gathered twice gets both, added in index order).
void gatherNdGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& index = requireInput(c, "Index");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireFloat(c, "Out@GRAD", g);
  requireSameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  requireShape(c, "X@GRAD", dx, x.shape(), "X's shape");
  Gather geo = gatherGeometry(c, x, index, "Out@GRAD", g);
  std::vector<double> acc(size_t(dx.numel()), 0.0);
  dispatchFloat(c, "Out@GRAD", g, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    for (int64_t t = 0; t < geo.count; ++t)
      for (int64_t j = 0; j < geo.block; ++j) acc[size_t(geo.offsets[size_t(t)] + j)] += double(gp[t * geo.block + j]);
    T* d = dx.data<T>();
    for (int64_t i = 0; i < dx.numel(); ++i) d[i] = T(acc[size_t(i)]);
  });
}

}  // namespace

void registerIndexKernels(KernelTable& t) {
  t.add("tril_triu", trilTriu);
  t.add("tril", tril);
  t.add("triu", triu);
  t.add("where", where);
  t.add("where_grad", whereGrad);
  t.add("full_like", fullLike);
  t.add("gather_nd", gatherNd);
  t.add("gather_nd_grad", gatherNdGrad);
}

}  // namespace spopt::rt
