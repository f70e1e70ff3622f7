#pragma once
// The window arithmetic of conv2d, conv2d_transpose and pool2d, shared by their rules
// (ops/vision_ops.cpp, ops/upsample_ops.cpp) and kernels (runtime/kernels/conv.cpp, conv_transpose.cpp): Paddle's padding_algorithm, paddings given as
// [h, w] or [top, bottom, left, right], dilations, ceil_mode and global / adaptive pooling.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spopt {

// One spatial dim of a sliding window.
struct WindowDim {
  int64_t in = 0, out = 0;
  int64_t k = 1, stride = 1, dilation = 1;
  int64_t pad_before = 0, pad_after = 0;
};

struct Window2d {
  WindowDim h, w;
  const WindowDim& dim(int i) const { return i ? w : h; }
};

// The attributes of a conv2d or pool2d that shape its window.
struct WindowAttrs {
  std::vector<int64_t> ksize, strides{1, 1}, paddings{0, 0}, dilations{1, 1};
  std::string padding_algorithm = "EXPLICIT";  // EXPLICIT, SAME or VALID
  bool ceil_mode = false;                      // pool2d: the last partial window counts
  bool global_pooling = false;                 // pool2d: one window over the whole plane
  bool adaptive = false;                       // pool2d: ksize is the output size
};

// Resolves the window over an `in_h` x `in_w` plane as Paddle does: SAME pads so that
// out = ceil(in / stride) (and, for conv, ignores the dilations), VALID pads nothing; global
// pooling covers the plane; adaptive pooling's windows come from adaptiveRange. nullopt with
// `why` set when an attribute is malformed or the window does not fit.
std::optional<Window2d> resolveWindow(int64_t in_h, int64_t in_w, const WindowAttrs& a, bool is_pool, std::string* why);

// conv2d_transpose is the input gradient of a convolution: its window is that convolution's, whose
// input (WindowDim::in) is the transposed convolution's result and whose output (WindowDim::out) is
// its input plane, in_h x in_w here. The result's size is Paddle's: (in - 1) * stride - paddings
// + dilation * (k - 1) + 1, plus output_padding (each below max(stride, dilation)), or
// output_size where given (each within [that, that + stride)); SAME pads as a convolution of
// the input plane would (dilation 1), VALID pads nothing. nullopt with `why` set, and `attr`
// the attribute at fault, when the window does not resolve.
std::optional<Window2d> resolveTransposeWindow(int64_t in_h, int64_t in_w, const WindowAttrs& a, const std::vector<int64_t>& output_size,
                                               const std::vector<int64_t>& output_padding, std::string* attr, std::string* why);

// Adaptive pooling's window i of `out` over `in` elements: [floor(i*in/out), ceil((i+1)*in/out)).
inline int64_t adaptiveStart(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t adaptiveEnd(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

}  // namespace spopt
