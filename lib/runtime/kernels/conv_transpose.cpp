// conv2d_transpose (+ grad), NCHW. A transposed convolution is the input gradient of the
// convolution whose window ops/conv_geometry.h resolves (resolveTransposeWindow): its Output is
// that convolution's input and its Input that convolution's output, so the forward is
// conv_gemm.h's convInputGrad and the grad its convForward and convFilterGrad, the GEMMs conv2d
// runs.
#include <string>

#include "ops/conv_geometry.h"
#include "runtime/kernels/conv_gemm.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// The convolution behind the op: Filter [C, M / groups, kh, kw] is its filter (C of its outputs,
// M / groups of its inputs per group), the op's Output [n, M, oh, ow] its input.
struct Transposed {
  ConvShape conv;
  Window2d w;
  std::vector<int64_t> output_dims() const { return {conv.n, conv.cin, conv.h, conv.w}; }
};

Transposed transposedConv(const KernelContext& c, const Tensor& x, const Tensor& f) {
  std::string format = stringAttr(c, "data_format", "NCHW");
  if (format != "NCHW" && format != "AnyLayout") kernelFail(c, "data_format " + format + " is not supported (NCHW only)");
  if (x.shape().size() != 4 || f.shape().size() != 4)
    kernelFail(c, "Input " + shapeStr(x.shape()) + " and Filter " + shapeStr(f.shape()) + " should be 4-D (NCHW)");
  requireFloat(c, "Input", x);
  requireSameStorage(c, "Filter", f, "Input", x);
  const int64_t groups = intAttr(c, "groups", 1);
  const auto &xs = x.shape(), &fs = f.shape();
  if (groups < 1 || xs[1] != fs[0] || fs[0] % groups)
    kernelFail(c, "Input " + shapeStr(xs) + ", Filter " + shapeStr(fs) + " and groups " + std::to_string(groups) + " do not agree");
  WindowAttrs a;
  a.ksize = {fs[2], fs[3]};
  a.strides = intsAttr(c, "strides", {1, 1});
  a.paddings = intsAttr(c, "paddings", {0, 0});
  a.dilations = intsAttr(c, "dilations", {1, 1});
  a.padding_algorithm = stringAttr(c, "padding_algorithm", "EXPLICIT");
  std::string attr, why;
  auto w = resolveTransposeWindow(xs[2], xs[3], a, intsAttr(c, "output_size", {}), intsAttr(c, "output_padding", {}), &attr, &why);
  if (!w) kernelFail(c, why);
  return {{xs[0], fs[1] * groups, w->h.in, w->w.in, fs[0], groups, fs[2], fs[3], xs[2], xs[3]}, *w};
}

void conv2dTranspose(KernelContext& c) {
  const Tensor& x = requireInput(c, "Input");
  const Tensor& f = requireInput(c, "Filter");
  Tensor& y = requireOutput(c, "Output");
  Transposed t = transposedConv(c, x, f);
  requireSameStorage(c, "Output", y, "Input", x);
  requireShape(c, "Output", y, t.output_dims(), "the transposed convolution of Input and Filter");
  dispatchFloat(c, "Input", x, [&](auto tag) {
    using T = decltype(tag);
    convInputGrad(t.conv, t.w, f.data<T>(), x.data<T>(), y.data<T>());
  });
}

// Input@GRAD = the convolution of Output@GRAD; Filter@GRAD = its filter gradient against Input.
void conv2dTransposeGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "Input");
  const Tensor& f = requireInput(c, "Filter");
  const Tensor& dy = requireInput(c, "Output@GRAD");
  Tensor* dx = optionalOutput(c, "Input@GRAD");
  Tensor* df = optionalOutput(c, "Filter@GRAD");
  Transposed t = transposedConv(c, x, f);
  requireSameStorage(c, "Output@GRAD", dy, "Input", x);
  requireShape(c, "Output@GRAD", dy, t.output_dims(), "the transposed convolution of Input and Filter");
  requireGradLike(c, "Input@GRAD", dx, "Input", x);
  requireGradLike(c, "Filter@GRAD", df, "Filter", f);
  dispatchFloat(c, "Input", x, [&](auto tag) {
    using T = decltype(tag);
    if (dx) convForward(t.conv, t.w, dy.data<T>(), f.data<T>(), dx->data<T>());
    if (df) convFilterGrad(t.conv, t.w, dy.data<T>(), x.data<T>(), df->data<T>());
  });
}

}  // namespace

void registerConvTransposeKernels(KernelTable& t) {
  t.add("conv2d_transpose", conv2dTranspose);
  t.add("conv2d_transpose_grad", conv2dTransposeGrad);
}

}  // namespace spopt::rt
