#include "ops/conv_geometry.h"

#include <algorithm>

namespace spopt {

namespace {

bool pair(const std::vector<int64_t>& v, const char* name, std::string* why) {
  if (v.size() == 2) return true;
  *why = std::string(name) + " should hold 2 values, has " + std::to_string(v.size());
  return false;
}

}  // namespace

std::optional<Window2d> resolveWindow(int64_t in_h, int64_t in_w, const WindowAttrs& a, bool is_pool, std::string* why) {
  const std::string& alg = a.padding_algorithm;
  if (alg != "EXPLICIT" && alg != "SAME" && alg != "VALID") {
    *why = "padding_algorithm \"" + alg + "\" is not EXPLICIT, SAME or VALID";
    return std::nullopt;
  }
  if (!pair(a.strides, "strides", why)) return std::nullopt;
  if (!is_pool && !pair(a.dilations, "dilations", why)) return std::nullopt;
  if (!(a.global_pooling && is_pool) && !pair(a.ksize, is_pool ? "ksize" : "the filter's spatial dims", why)) return std::nullopt;
  if (a.paddings.size() != 2 && a.paddings.size() != 4) {
    *why = "paddings should hold 2 or 4 values, has " + std::to_string(a.paddings.size());
    return std::nullopt;
  }
  Window2d win;
  const int64_t in[2] = {in_h, in_w};
  for (int i = 0; i < 2; ++i) {
    WindowDim& d = i ? win.w : win.h;
    d.in = in[i];
    d.k = a.global_pooling && is_pool ? in[i] : a.ksize[size_t(i)];
    d.stride = a.strides[size_t(i)];
    d.dilation = is_pool ? 1 : a.dilations[size_t(i)];
    bool four = a.paddings.size() == 4;
    d.pad_before = a.paddings[size_t(four ? 2 * i : i)];
    d.pad_after = a.paddings[size_t(four ? 2 * i + 1 : i)];
    if (d.in <= 0 || d.k <= 0 || d.stride <= 0 || d.dilation <= 0 || d.pad_before < 0 || d.pad_after < 0) {
      *why = "input " + std::to_string(d.in) + ", window " + std::to_string(d.k) + ", stride " + std::to_string(d.stride) +
             ", dilation " + std::to_string(d.dilation) + " and paddings must be positive (paddings non-negative)";
      return std::nullopt;
    }
    if (is_pool && (a.global_pooling || a.adaptive)) {
      d.pad_before = d.pad_after = 0;
      if (a.global_pooling) d.stride = 1;
      d.out = a.global_pooling ? 1 : d.k;
      continue;
    }
    if (alg == "VALID") d.pad_before = d.pad_after = 0;
    if (alg == "SAME") {
      d.dilation = 1;
      int64_t out = (d.in + d.stride - 1) / d.stride;
      int64_t pad = std::max<int64_t>((out - 1) * d.stride + d.k - d.in, 0);
      d.pad_before = pad / 2;
      d.pad_after = pad - pad / 2;
    }
    int64_t span = d.dilation * (d.k - 1) + 1;
    int64_t room = d.in + d.pad_before + d.pad_after - span;
    if (room < 0) {
      *why = "the window (" + std::to_string(span) + ") is larger than the padded input (" +
             std::to_string(d.in + d.pad_before + d.pad_after) + ")";
      return std::nullopt;
    }
    d.out = (is_pool && a.ceil_mode ? room + d.stride - 1 : room) / d.stride + 1;
  }
  return win;
}

namespace {

// The size Paddle's conv_transpose gives dim `d` before output_size / output_padding.
int64_t transposedSize(const WindowDim& d) { return (d.out - 1) * d.stride - d.pad_before - d.pad_after + d.dilation * (d.k - 1) + 1; }

bool setError(std::string* attr, std::string* why, const char* name, std::string text) {
  *attr = name;
  *why = std::move(text);
  return false;
}

// Sets d.in from output_size / output_padding (index i), as Paddle's ConvTransposeInferMeta.
bool transposedDim(WindowDim& d, size_t i, const std::vector<int64_t>& output_size, const std::vector<int64_t>& output_padding,
                   std::string* attr, std::string* why) {
  const int64_t infer = transposedSize(d);
  d.in = infer;
  if (!output_size.empty()) {
    if (output_size.size() != 2) return setError(attr, why, "output_size", "output_size should hold 2 values, has " + std::to_string(output_size.size()));
    d.in = output_size[i];
    if (d.in < infer || d.in >= infer + d.stride)
      return setError(attr, why, "output_size",
                      "output_size " + std::to_string(d.in) + " should lie in [" + std::to_string(infer) + ", " + std::to_string(infer + d.stride) + ")");
  } else if (!output_padding.empty()) {
    if (output_padding.size() != 2)
      return setError(attr, why, "output_padding", "output_padding should hold 2 values, has " + std::to_string(output_padding.size()));
    const int64_t pad = output_padding[i];
    if (pad < 0 || pad >= std::max(d.stride, d.dilation))
      return setError(attr, why, "output_padding",
                      "output_padding " + std::to_string(pad) + " should lie in [0, max(stride, dilation) = " +
                          std::to_string(std::max(d.stride, d.dilation)) + ")");
    d.in = infer + pad;
  }
  if (d.in < 1) return setError(attr, why, "paddings", "the result's size " + std::to_string(d.in) + " is not positive");
  return true;
}

}  // namespace

std::optional<Window2d> resolveTransposeWindow(int64_t in_h, int64_t in_w, const WindowAttrs& a, const std::vector<int64_t>& output_size,
                                               const std::vector<int64_t>& output_padding, std::string* attr, std::string* why) {
  *attr = "paddings";
  const std::string& alg = a.padding_algorithm;
  if (alg != "EXPLICIT" && alg != "SAME" && alg != "VALID") {
    *attr = "padding_algorithm";
    *why = "padding_algorithm \"" + alg + "\" is not EXPLICIT, SAME or VALID";
    return std::nullopt;
  }
  for (const auto& [values, name] : {std::pair{&a.strides, "strides"}, std::pair{&a.dilations, "dilations"}})
    if (!pair(*values, name, why)) {
      *attr = name;
      return std::nullopt;
    }
  if (!pair(a.ksize, "the filter's spatial dims", why)) return std::nullopt;
  if (a.paddings.size() != 2 && a.paddings.size() != 4) {
    *why = "paddings should hold 2 or 4 values, has " + std::to_string(a.paddings.size());
    return std::nullopt;
  }
  Window2d win;
  const int64_t in[2] = {in_h, in_w};
  for (size_t i = 0; i < 2; ++i) {
    WindowDim& d = i ? win.w : win.h;
    d.out = in[i];
    d.k = a.ksize[i];
    d.stride = a.strides[i];
    d.dilation = a.dilations[i];
    const bool four = a.paddings.size() == 4;
    d.pad_before = a.paddings[four ? 2 * i : i];
    d.pad_after = a.paddings[four ? 2 * i + 1 : i];
    if (alg == "VALID") d.pad_before = d.pad_after = 0;
    if (alg == "SAME") {
      d.dilation = 1;
      const int64_t out = (d.out + d.stride - 1) / std::max<int64_t>(d.stride, 1);
      const int64_t pad = std::max<int64_t>((out - 1) * d.stride + d.k - d.out, 0);
      d.pad_before = pad / 2;
      d.pad_after = pad - pad / 2;
    }
    if (d.out <= 0 || d.k <= 0 || d.stride <= 0 || d.dilation <= 0 || d.pad_before < 0 || d.pad_after < 0) {
      *why = "input " + std::to_string(d.out) + ", window " + std::to_string(d.k) + ", stride " + std::to_string(d.stride) +
             ", dilation " + std::to_string(d.dilation) + " and paddings must be positive (paddings non-negative)";
      return std::nullopt;
    }
    if (!transposedDim(d, i, output_size, output_padding, attr, why)) return std::nullopt;
  }
  return win;
}

}  // namespace spopt
