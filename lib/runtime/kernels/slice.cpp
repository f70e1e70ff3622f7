// Shape ops that pick or repeat parts of a tensor: squeeze2, slice, stack, expand_v2, with their
// grads. Moves run on every storage; expand_grad's sums are formed in double in element order.
#include <cstring>
#include <string>
#include <vector>

#include "ops/index_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

using Dims = std::vector<int64_t>;

// Values of an integer tensor operand (StartsTensor, a Shape input).
Dims tensorValues(const Tensor& t) {
  Dims v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(int64_t(scalarAt(t, i)));
  return v;
}

// squeeze2: X without the size-1 dims of axes (all of them when axes is empty).
void squeeze(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  if (c.io.inputCount("AxesTensorList") > 0) kernelFail(c, "AxesTensorList is not supported (give axes or AxesTensor)");
  const Tensor* at = optionalInput(c, "AxesTensor");
  Dims axes = at ? tensorValues(*at) : intsAttr(c, "axes", {});
  std::string why;
  auto want = resolveSqueeze(x.shape(), axes, &why);  // shared with the verifier
  if (!want) kernelFail(c, why);
  requireShape(c, "Out", out, *want, "X without the size-1 dims of axes");
  shareTensor(c, x, "X", out, "Out");
  if (const Tensor* xs = optionalOutput(c, "XShape")) {
    Dims rec = x.shape();
    rec.insert(rec.begin(), 0);
    requireShape(c, "XShape", *xs, rec, "[0, ...X dims]");
  }
}

// squeeze2_grad: Out@GRAD's values with X's dims (XShape's dims[1:], or PIR's operand 0: x, or an
// earlier Paddle's xshape; ops/index_math.h).
void squeezeGrad(KernelContext& c) {
  const Tensor* x = optionalInput(c, "X");
  const Tensor* xs = x ? nullptr : &requireInput(c, "XShape");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  std::string why;
  auto want = squeezeGradXDims((x ? x : xs)->shape(), !x, dx.shape(), &why);
  if (!want) kernelFail(c, why);
  requireShape(c, "X@GRAD", dx, *want, x ? "X's dims" : "XShape's dims[1:]");
  shareTensor(c, g, "Out@GRAD", dx, "X@GRAD");
}

// Copies between a full tensor of dims `full` and its box (begin, sliced): gather the box into
// `box` (slice) or scatter `box` into the full tensor (slice_grad, which zeroes the rest first).
void copyBox(const std::byte* src, std::byte* dst, const Dims& full, const Dims& begin, const Dims& sliced, size_t elem, bool scatter) {
  size_t r = full.size();
  int64_t total = product(sliced);
  if (total == 0) return;
  if (r == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  int64_t run = sliced[r - 1];
  Dims idx(r, 0);
  for (int64_t done = 0; done < total; done += run) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off = off * full[d] + begin[d] + idx[d];
    size_t full_at = size_t(off) * elem, box_at = size_t(done) * elem, bytes = size_t(run) * elem;
    if (scatter) std::memcpy(dst + full_at, src + box_at, bytes);
    else std::memcpy(dst + box_at, src + full_at, bytes);
    for (size_t d = r - 1; d-- > 0;) {  // next run: odometer over all dims but the last
      if (++idx[d] < sliced[d]) break;
      idx[d] = 0;
    }
  }
}

SliceBox sliceBox(const KernelContext& c, const Dims& in) {
  if (c.io.inputCount("StartsTensorList") > 0 || c.io.inputCount("EndsTensorList") > 0)
    kernelFail(c, "StartsTensorList / EndsTensorList are not supported (give starts and ends, or StartsTensor / EndsTensor)");
  const Tensor* st = optionalInput(c, "StartsTensor");
  const Tensor* et = optionalInput(c, "EndsTensor");
  Dims starts = st ? tensorValues(*st) : intsAttr(c, "starts", {});
  Dims ends = et ? tensorValues(*et) : intsAttr(c, "ends", {});
  std::string why;
  auto box = resolveSlice(in, intsAttr(c, "axes", {}), starts, ends, intsAttr(c, "decrease_axis", {}), &why);  // shared with the verifier
  if (!box) kernelFail(c, why);
  return *box;
}

// The sliced tensor's dims, as declared: the box with decrease_axis dropped ([] or [1] when none is left).
void requireSliceShape(const KernelContext& c, std::string_view name, const Tensor& t, const SliceBox& box) {
  if (box.out.empty() && (t.shape().empty() || t.shape() == Dims{1})) return;
  requireShape(c, name, t, box.out, "Input sliced by starts, ends and axes");
}

void slice(KernelContext& c) {
  const Tensor& in = requireInput(c, "Input");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "Input", in);
  SliceBox box = sliceBox(c, in.shape());
  requireSliceShape(c, "Out", out, box);
  if (out.raw() == in.raw() && in.numel()) kernelFail(c, "Out may not share Input's buffer");
  copyBox(static_cast<const std::byte*>(in.raw()), static_cast<std::byte*>(out.raw()), in.shape(), box.begin, box.sliced,
          storageSize(in.storage()), false);
}

// slice_grad: Input@GRAD is Out@GRAD in the box, zero elsewhere.
void sliceGrad(KernelContext& c) {
  const Tensor& in = requireInput(c, "Input");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "Input@GRAD");
  requireSameStorage(c, "Input@GRAD", dx, "Out@GRAD", g);
  requireShape(c, "Input@GRAD", dx, in.shape(), "Input's shape");
  SliceBox box = sliceBox(c, in.shape());
  requireSliceShape(c, "Out@GRAD", g, box);
  if (dx.raw() == g.raw() && g.numel()) kernelFail(c, "Input@GRAD may not share Out@GRAD's buffer");
  if (dx.bytes()) std::memset(dx.raw(), 0, dx.bytes());
  copyBox(static_cast<const std::byte*>(g.raw()), static_cast<std::byte*>(dx.raw()), in.shape(), box.begin, box.sliced,
          storageSize(g.storage()), true);
}

// stack: Y[..., i, ...] = X[i] along a new dim `axis`. Legacy X is one slot per part; PIR's is
// one vector, whose parts the executor hands over the same way.
void stack(KernelContext& c) {
  size_t n = c.io.inputCount("X");
  if (n == 0) kernelFail(c, "has no X");
  Tensor& y = requireOutput(c, "Y");
  const Tensor& x0 = requireInput(c, "X", 0);
  int64_t axis = intAttr(c, "axis", 0);
  std::string why;
  auto want = resolveStack(x0.shape(), int64_t(n), &axis, &why);  // shared with the verifier
  if (!want) kernelFail(c, why);
  requireSameStorage(c, "Y", y, "X[0]", x0);
  requireShape(c, "Y", y, *want, "the parts stacked along axis");
  int64_t outer = product(x0.shape(), 0, size_t(axis));
  size_t elem = storageSize(x0.storage()), block = size_t(product(x0.shape(), size_t(axis))) * elem;
  std::byte* dst = static_cast<std::byte*>(y.raw());
  for (size_t i = 0; i < n; ++i) {
    const Tensor& xi = requireInput(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    requireSameStorage(c, name, xi, "X[0]", x0);
    requireSameShape(c, name, xi, "X[0]", x0);
    if (xi.raw() == y.raw() && xi.numel()) kernelFail(c, "Y may not share a buffer with X");
    const std::byte* src = static_cast<const std::byte*>(xi.raw());
    for (int64_t o = 0; o < outer && block; ++o) std::memcpy(dst + (size_t(o) * n + i) * block, src + size_t(o) * block, block);
  }
}

// stack_grad: X@GRAD[i] = Y@GRAD[..., i, ...]. In PIR X@GRAD is one vector, held stacked as
// [n, ...part dims] (the layout of split_with_num's result, read by builtin.slice).
void stackGrad(KernelContext& c) {
  const Tensor& g = requireInput(c, "Y@GRAD");
  if (g.shape().empty()) kernelFail(c, "Y@GRAD is 0-D");
  int64_t axis = normaliseAxis(c, intAttr(c, "axis", 0), g.shape().size(), "axis");
  int64_t n = g.shape()[size_t(axis)];
  Dims part = g.shape();
  part.erase(part.begin() + axis);
  int64_t outer = product(g.shape(), 0, size_t(axis));
  size_t elem = storageSize(g.storage()), block = size_t(product(part, size_t(axis))) * elem;
  const std::byte* src = static_cast<const std::byte*>(g.raw());
  auto copyPart = [&](int64_t i, std::byte* dst) {
    for (int64_t o = 0; o < outer && block; ++o) std::memcpy(dst + size_t(o) * block, src + (size_t(o) * size_t(n) + size_t(i)) * block, block);
  };
  if (c.op.dialect() == Dialect::Pir) {
    Tensor& vec = requireOutput(c, "X@GRAD");
    requireShape(c, "X@GRAD", vec, {n}, "a vector of the parts");
    Dims stacked = part;
    stacked.insert(stacked.begin(), n);
    vec = Tensor(g.dtype(), stacked);
    for (int64_t i = 0; i < n; ++i) copyPart(i, static_cast<std::byte*>(vec.raw()) + size_t(i) * size_t(product(part)) * elem);
    return;
  }
  if (int64_t(c.io.outputCount("X@GRAD")) != n)
    kernelFail(c, "Y@GRAD " + shapeStr(g.shape()) + " has " + std::to_string(n) + " parts along axis " + std::to_string(axis) + " but there are " +
                      std::to_string(c.io.outputCount("X@GRAD")) + " X@GRAD");
  for (int64_t i = 0; i < n; ++i) {
    Tensor* dx = optionalOutput(c, "X@GRAD", size_t(i));
    if (!dx) continue;
    std::string name = "X@GRAD[" + std::to_string(i) + "]";
    requireSameStorage(c, name, *dx, "Y@GRAD", g);
    requireShape(c, name, *dx, part, "a part of Y@GRAD");
    copyPart(i, static_cast<std::byte*>(dx->raw()));
  }
}

// expand's target (the shape attribute, or a Shape input) resolved against X.
Dims expandTarget(const KernelContext& c, const Dims& x) {
  if (c.io.inputCount("expand_shapes_tensor") > 0) kernelFail(c, "expand_shapes_tensor is not supported (give shape or Shape)");
  const Tensor* st = optionalInput(c, "Shape");
  Dims shape = st ? tensorValues(*st) : intsAttr(c, "shape", {});
  std::string why;
  auto want = resolveExpand(x, shape, &why);  // shared with the verifier
  if (!want) kernelFail(c, why);
  return *want;
}

// For each element of the expanded tensor (row-major), the index of its source element in X.
std::vector<int64_t> expandSources(const Dims& x, const Dims& out) {
  size_t r = out.size(), lead = r - x.size();
  Dims stride(r, 0);
  for (size_t d = r, s = 1; d-- > lead;) {
    stride[d] = x[d - lead] == 1 ? 0 : int64_t(s);
    s *= size_t(x[d - lead]);
  }
  std::vector<int64_t> src(size_t(product(out)));
  Dims idx(r, 0);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += idx[d] * stride[d];
    src[i] = off;
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return src;
}

void expand(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Out", out, "X", x);
  requireShape(c, "Out", out, expandTarget(c, x.shape()), "X expanded to shape");
  if (out.raw() == x.raw() && x.numel()) kernelFail(c, "Out may not share X's buffer");
  std::vector<int64_t> src = expandSources(x.shape(), out.shape());
  dispatchStorage(x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    for (size_t i = 0; i < src.size(); ++i) o[i] = xp[src[i]];
  });
}

// expand_grad: each element of X@GRAD sums the Out@GRAD elements it was copied to.
void expandGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireFloat(c, "Out@GRAD", g);
  requireSameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  requireShape(c, "X@GRAD", dx, x.shape(), "X's shape");
  requireShape(c, "Out@GRAD", g, expandTarget(c, x.shape()), "X expanded to shape");
  std::vector<int64_t> src = expandSources(x.shape(), g.shape());
  std::vector<double> acc(size_t(dx.numel()), 0.0);
  dispatchFloat(c, "Out@GRAD", g, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    for (size_t i = 0; i < src.size(); ++i) acc[size_t(src[i])] += double(gp[i]);
    T* d = dx.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) d[i] = T(acc[i]);
  });
}

}  // namespace

void registerSliceKernels(KernelTable& t) {
  t.add("squeeze", squeeze);
  t.add("squeeze_grad", squeezeGrad);
  t.add("slice", slice);
  t.add("slice_grad", sliceGrad);
  t.add("stack", stack);
  t.add("stack_grad", stackGrad);
  t.add("expand", expand);
  t.add("expand_grad", expandGrad);
}

}  // namespace spopt::rt
