// nearest_interp (v2) and its grad, NCHW or NHWC: each output element copies the input element
// Paddle's CPU kernel picks (ops/interp_geometry.h: the size from SizeTensor, OutSize, Scale or
// the attributes, the float32 ratio, truncation or rounding with align_corners).
#include <algorithm>
#include <string>
#include <vector>

#include "ops/interp_geometry.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

struct NearestPlan {
  Interp2d r;
  bool channels_last;
  int64_t n, c;
  std::vector<int64_t> rows, cols;  // the input row of each output row, the input column of each column
  std::vector<int64_t> out_dims() const {
    return channels_last ? std::vector<int64_t>{n, r.h.out, r.w.out, c} : std::vector<int64_t>{n, c, r.h.out, r.w.out};
  }
};

// Every value of the tensors in slot `slot`, in order (legacy lists of [1] tensors, PIR's one vector).
std::vector<int64_t> intValues(const KernelContext& c, std::string_view slot) {
  std::vector<int64_t> v;
  for (size_t i = 0, k = c.io.inputCount(slot); i < k; ++i) {
    const Tensor& t = requireInput(c, slot, i);
    for (int64_t j = 0; j < t.numel(); ++j) v.push_back(int64_t(scalarAt(t, j)));
  }
  return v;
}

NearestPlan nearestPlan(const KernelContext& c, const Tensor& x) {
  requireFloat(c, "X", x);
  std::string layout = stringAttr(c, "data_layout", "NCHW");
  if (layout != "NCHW" && layout != "NHWC" && layout != "AnyLayout") kernelFail(c, "data_layout \"" + layout + "\" is neither NCHW nor NHWC");
  std::string method = stringAttr(c, "interp_method", "nearest");
  if (method != "nearest") kernelFail(c, "interp_method \"" + method + "\" is not nearest");
  if (x.shape().size() != 4) kernelFail(c, "X " + shapeStr(x.shape()) + " should be 4-D (NCHW or NHWC)");
  const bool last = layout == "NHWC";
  const auto& xs = x.shape();
  InterpSources src;
  src.out_h = intAttr(c, "out_h", -1);
  src.out_w = intAttr(c, "out_w", -1);
  if (c.io.inputCount("SizeTensor") > 0) src.size_tensor = intValues(c, "SizeTensor");
  if (optionalInput(c, "OutSize")) src.out_size = intValues(c, "OutSize");
  if (const Tensor* scale = optionalInput(c, "Scale")) {
    src.scale_from_tensor = true;
    for (int64_t j = 0; j < scale->numel(); ++j) src.scale.push_back(scalarAt(*scale, j));
  } else {
    src.scale = numbersAttr(c, "scale");
  }
  const bool align = boolAttr(c, "align_corners", true);
  std::string why;
  auto r = resolveNearest2d(xs[last ? 1 : 2], xs[last ? 2 : 3], src, align, &why);
  if (!r) kernelFail(c, why);
  NearestPlan p{*r, last, xs[0], xs[last ? 3 : 1], {}, {}};
  for (int64_t o = 0; o < r->h.out; ++o) p.rows.push_back(nearestSource(r->h, o, align));
  for (int64_t o = 0; o < r->w.out; ++o) p.cols.push_back(nearestSource(r->w, o, align));
  return p;
}

// Calls visit(output index, input index) for every output element, in output order.
template <typename Visit> void eachPick(const NearestPlan& p, Visit visit) {
  const int64_t ih = p.r.h.in, iw = p.r.w.in, oh = p.r.h.out, ow = p.r.w.out;
  int64_t o = 0;
  if (p.channels_last) {
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t in = ((n * ih + p.rows[size_t(y)]) * iw + p.cols[size_t(x)]) * p.c;
          for (int64_t ch = 0; ch < p.c; ++ch) visit(o++, in + ch);
        }
    return;
  }
  for (int64_t plane = 0; plane < p.n * p.c; ++plane)
    for (int64_t y = 0; y < oh; ++y) {
      const int64_t row = (plane * ih + p.rows[size_t(y)]) * iw;
      for (int64_t x = 0; x < ow; ++x) visit(o++, row + p.cols[size_t(x)]);
    }
}

void nearestInterp(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  NearestPlan p = nearestPlan(c, x);
  requireSameStorage(c, "Out", out, "X", x);
  requireShape(c, "Out", out, p.out_dims(), "X resized");
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    eachPick(p, [&](int64_t to, int64_t from) { o[to] = in[from]; });
  });
}

// X@GRAD[i] = the sum of Out@GRAD over the outputs that copied X[i], added in output order.
void nearestInterpGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& dy = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  NearestPlan p = nearestPlan(c, x);
  requireSameStorage(c, "Out@GRAD", dy, "X", x);
  requireShape(c, "Out@GRAD", dy, p.out_dims(), "X resized");
  requireGradLike(c, "X@GRAD", &dx, "X", x);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* g = dy.data<T>();
    T* d = dx.data<T>();
    std::fill(d, d + dx.numel(), T(0));
    eachPick(p, [&](int64_t from, int64_t to) { d[to] += g[from]; });
  });
}

}  // namespace

void registerInterpKernels(KernelTable& t) {
  t.add("nearest_interp", nearestInterp);
  t.add("nearest_interp_grad", nearestInterpGrad);
}

}  // namespace spopt::rt
