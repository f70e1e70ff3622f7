// Data-movement ops: reshape2, transpose2, split, concat (and grads). They move bytes, so they run
// on every storage (float, int64, uint8) without dispatch.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/shape_math.h"
#include "analysis/split_sections.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/permute.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

using Dims = std::vector<int64_t>;

// XShape, when present, is [0, ...X dims] (Paddle's way to keep X's shape for the grad op).
void checkXShape(const KernelContext& c, const Tensor& x) {
  const Tensor* xs = optionalOutput(c, "XShape");
  if (!xs) return;
  Dims want = x.shape();
  want.insert(want.begin(), 0);
  if (xs->shape() != want) requireShape(c, "XShape", *xs, want, "[0, ...X dims]");
}

// X's dims as recorded in XShape.
Dims dimsFromXShape(const KernelContext& c, const Tensor& xs) {
  if (xs.shape().empty()) kernelFail(c, "XShape " + shapeStr(xs.shape()) + " should be [0, ...X dims]");
  return Dims(xs.shape().begin() + 1, xs.shape().end());
}

// reshape2: the `shape` attribute (or a Shape input), 0 copies X's dim at that index, one -1 infers.
void reshape2(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  Dims target;
  if (const Tensor* st = optionalInput(c, "Shape")) {
    for (int64_t i = 0; i < st->numel(); ++i) target.push_back(int64_t(scalarAt(*st, i)));
  } else {
    target = intsAttr(c, "shape", {});
  }
  // The shape rule is shared with the verifier (ops/shape_math.h).
  std::string why;
  auto resolved = resolveReshape(x.shape(), target, &why);
  if (!resolved) kernelFail(c, why);
  target = *resolved;
  requireShape(c, "Out", out, target, "X reshaped");
  shareTensor(c, x, "X", out, "Out");
  checkXShape(c, x);
}

// unsqueeze2: X with a 1 inserted at each of `axes` (or an AxesTensor's values).
void unsqueeze2(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  Dims axes;
  if (const Tensor* at = optionalInput(c, "AxesTensor")) {
    for (int64_t i = 0; i < at->numel(); ++i) axes.push_back(int64_t(scalarAt(*at, i)));
  } else {
    if (c.io.inputCount("AxesTensorList") > 0) kernelFail(c, "AxesTensorList is not supported (give axes or AxesTensor)");
    axes = intsAttr(c, "axes", {});
  }
  std::string why;
  auto target = resolveUnsqueeze(x.shape(), axes, &why);
  if (!target) kernelFail(c, why);
  requireShape(c, "Out", out, *target, "X with a 1 at each of axes");
  shareTensor(c, x, "X", out, "Out");
  checkXShape(c, x);
}

void reshape2Grad(KernelContext& c) {
  const Tensor& xs = requireInput(c, "XShape");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireShape(c, "X@GRAD", dx, dimsFromXShape(c, xs), "XShape's dims[1:]");
  shareTensor(c, g, "Out@GRAD", dx, "X@GRAD");
}

Dims checkedPerm(const KernelContext& c, size_t rank) {
  Dims axis = intsAttr(c, "axis", {});
  auto perm = resolvePermutation(axis, rank);  // shared with the verifier
  if (!perm) kernelFail(c, "axis " + shapeStr(axis) + " is no permutation of " + std::to_string(rank) + " dims");
  return *perm;
}

void transpose2(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "X", x);
  Dims perm = checkedPerm(c, x.shape().size());
  Dims want(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) want[i] = x.shape()[size_t(perm[i])];
  requireShape(c, "Out", out, want, "X transposed by axis");
  if (out.raw() == x.raw()) kernelFail(c, "Out may not share X's buffer");
  permute(static_cast<const std::byte*>(x.raw()), x.shape(), perm, static_cast<std::byte*>(out.raw()),
          storageSize(x.storage()));
  checkXShape(c, x);
}

// transpose2_grad: dX = dOut permuted by the inverse of axis.
void transpose2Grad(KernelContext& c) {
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireSameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  // PIR's transpose_grad has no XShape: X's dims are X@GRAD's.
  const Tensor* xs = c.op.dialect() == Dialect::Pir ? nullptr : &requireInput(c, "XShape");
  Dims xdims = xs ? dimsFromXShape(c, *xs) : dx.shape();
  requireShape(c, "X@GRAD", dx, xdims, "XShape's dims[1:]");
  Dims perm = checkedPerm(c, xdims.size());
  Dims gshape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) gshape[i] = xdims[size_t(perm[i])];
  requireShape(c, "Out@GRAD", g, gshape, "X transposed by axis");
  Dims inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  permute(static_cast<const std::byte*>(g.raw()), gshape, inverse, static_cast<std::byte*>(dx.raw()),
          storageSize(g.storage()));
}

// split: Out[i] gets a slice of X along axis; `num` equal parts, or `sections` with one -1 inferred.
void split(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  size_t n_out = c.io.outputCount("Out");
  if (n_out == 0) kernelFail(c, "has no Out");
  if (x.shape().empty()) kernelFail(c, "X is 0-D");
  int64_t axis = normaliseAxis(c, intAttr(c, "axis", 0), x.shape().size(), "axis");
  int64_t len = x.shape()[size_t(axis)];
  int64_t num = intAttr(c, "num", 0);
  Dims sections = intsAttr(c, "sections", {});
  if (num > 0) {
    if (len % num != 0)
      kernelFail(c, "X " + shapeStr(x.shape()) + " dim " + std::to_string(axis) + " does not split into " +
                        std::to_string(num) + " equal parts");
    sections.assign(size_t(num), len / num);
  } else {
    // The rule the verifier checks too (analysis/split_sections.h).
    std::string why;
    auto resolved = resolveSplitSections(sections, len, &why);
    if (sections.empty() || !resolved)
      kernelFail(c, "sections " + shapeStr(sections) + " " + (why.empty() ? "is empty" : why) + " (dim " + std::to_string(axis) +
                        " of X " + shapeStr(x.shape()) + ")");
    sections = *resolved;
  }
  if (sections.size() != n_out)
    kernelFail(c, "splits X into " + std::to_string(sections.size()) + " parts but has " + std::to_string(n_out) + " Out");
  int64_t outer = product(x.shape(), 0, size_t(axis)), inner = product(x.shape(), size_t(axis) + 1);
  size_t elem = storageSize(x.storage());
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  int64_t start = 0;
  for (size_t i = 0; i < n_out; ++i) {
    Tensor* out = optionalOutput(c, "Out", i);
    int64_t part = sections[i];
    if (out) {
      requireSameStorage(c, "Out[" + std::to_string(i) + "]", *out, "X", x);
      Dims want = x.shape();
      want[size_t(axis)] = part;
      requireShape(c, "Out[" + std::to_string(i) + "]", *out, want, "a part of X");
      std::byte* dst = static_cast<std::byte*>(out->raw());
      size_t block = size_t(part * inner) * elem;
      for (int64_t o = 0; o < outer && block; ++o)
        std::memcpy(dst + size_t(o) * block, src + size_t((o * len + start) * inner) * elem, block);
    }
    start += part;
  }
}

// concat: Out = X[0..n) joined along axis.
void concat(KernelContext& c) {
  size_t n_in = c.io.inputCount("X");
  if (n_in == 0) kernelFail(c, "has no X");
  Tensor& out = requireOutput(c, "Out");
  const Tensor& x0 = requireInput(c, "X", 0);
  if (x0.shape().empty()) kernelFail(c, "X[0] is 0-D");
  int64_t axis = normaliseAxis(c, intAttr(c, "axis", 0), x0.shape().size(), "axis");
  Dims want = x0.shape();
  want[size_t(axis)] = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor& xi = requireInput(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    requireSameStorage(c, name, xi, "Out", out);
    Dims a = xi.shape(), b = x0.shape();
    if (a.size() != b.size()) kernelFail(c, name + " " + shapeStr(a) + " and X[0] " + shapeStr(b) + " differ in rank");
    a[size_t(axis)] = b[size_t(axis)] = 0;
    if (a != b)
      kernelFail(c, name + " " + shapeStr(xi.shape()) + " and X[0] " + shapeStr(x0.shape()) +
                        " differ outside axis " + std::to_string(axis));
    want[size_t(axis)] += xi.shape()[size_t(axis)];
  }
  requireShape(c, "Out", out, want, "X joined along axis");
  int64_t outer = product(want, 0, size_t(axis)), inner = product(want, size_t(axis) + 1);
  size_t elem = storageSize(out.storage());
  size_t out_row = size_t(want[size_t(axis)] * inner) * elem;
  std::byte* dst = static_cast<std::byte*>(out.raw());
  size_t start = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor& xi = *c.io.input("X", i);
    if (xi.raw() == out.raw() && xi.numel()) kernelFail(c, "Out may not share a buffer with X");
    size_t block = size_t(xi.shape()[size_t(axis)] * inner) * elem;
    const std::byte* src = static_cast<const std::byte*>(xi.raw());
    for (int64_t o = 0; o < outer && block; ++o) std::memcpy(dst + size_t(o) * out_row + start, src + size_t(o) * block, block);
    start += block;
  }
}

}  // namespace

void registerShapeKernels(KernelTable& t) {
  t.add("reshape", reshape2);
  t.add("reshape_grad", reshape2Grad);
  t.add("unsqueeze", unsqueeze2);
  t.add("transpose", transpose2);
  t.add("transpose_grad", transpose2Grad);
  t.add("split", split);
  t.add("concat", concat);
}

}  // namespace spopt::rt
