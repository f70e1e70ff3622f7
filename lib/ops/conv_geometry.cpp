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

}  // namespace spopt
