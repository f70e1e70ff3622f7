#include "ops/index_math.h"

#include <algorithm>

namespace spopt {

std::optional<ShapeDims> squeezeGradXDims(const ShapeDims& v, bool v_is_xshape, const ShapeDims& dx, std::string* why) {
  const bool record = v_is_xshape || (v.size() == dx.size() + 1 && v[0] == 0 && std::equal(dx.begin(), dx.end(), v.begin() + 1));
  if (!record) return v;
  if (v.empty()) {
    *why = "XShape [] should be [0, ...X dims]";
    return std::nullopt;
  }
  return ShapeDims(v.begin() + 1, v.end());
}

std::optional<ShapeDims> resolveSqueeze(const ShapeDims& x, const ShapeDims& axes, std::string* why) {
  int64_t r = int64_t(x.size());
  std::vector<bool> drop(x.size(), false);
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + r : a;
    if (n < 0 || n >= r) {
      *why = "axis " + std::to_string(a) + " is out of range for " + dimsText(x);
      return std::nullopt;
    }
    drop[size_t(n)] = x[size_t(n)] == 1;
  }
  ShapeDims out;
  for (size_t d = 0; d < x.size(); ++d)
    if (!(axes.empty() ? x[d] == 1 : drop[d])) out.push_back(x[d]);
  return out;
}

std::optional<SliceBox> resolveSlice(const ShapeDims& x, const ShapeDims& axes, const ShapeDims& starts, const ShapeDims& ends,
                                     const ShapeDims& decrease_axis, std::string* why) {
  if (starts.size() != axes.size() || ends.size() != axes.size()) {
    *why = "axes " + dimsText(axes) + ", starts " + dimsText(starts) + " and ends " + dimsText(ends) + " differ in length";
    return std::nullopt;
  }
  int64_t r = int64_t(x.size());
  SliceBox b{ShapeDims(x.size(), 0), x, {}};
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r) {
      *why = "axis " + std::to_string(axes[i]) + " is out of range for " + dimsText(x);
      return std::nullopt;
    }
    int64_t len = x[size_t(a)];
    auto clamp = [len](int64_t v) { return std::clamp(v < 0 ? v + len : v, int64_t(0), len); };
    int64_t s = clamp(starts[i]), e = clamp(ends[i]);
    b.begin[size_t(a)] = s;
    b.sliced[size_t(a)] = std::max<int64_t>(e - s, 0);
  }
  std::vector<bool> drop(x.size(), false);
  for (int64_t a : decrease_axis) {
    int64_t n = a < 0 ? a + r : a;
    if (n < 0 || n >= r || b.sliced[size_t(n)] != 1) {
      *why = "decrease_axis " + std::to_string(a) + " is not a dim sliced to 1 of " + dimsText(b.sliced);
      return std::nullopt;
    }
    drop[size_t(n)] = true;
  }
  for (size_t d = 0; d < x.size(); ++d)
    if (!drop[d]) b.out.push_back(b.sliced[d]);
  return b;
}

std::optional<ShapeDims> resolveExpand(const ShapeDims& x, const ShapeDims& shape, std::string* why) {
  if (shape.size() < x.size()) {
    *why = "shape " + dimsText(shape) + " has fewer dims than X " + dimsText(x);
    return std::nullopt;
  }
  size_t lead = shape.size() - x.size();
  ShapeDims out(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t want = shape[d];
    int64_t have = d < lead ? -2 : x[d - lead];
    if (want == -1 && have != -2) {
      out[d] = have;
    } else if (want >= 0 && (have == -2 || have == want || have == 1)) {
      out[d] = want;
    } else {
      *why = "X " + dimsText(x) + " does not expand to shape " + dimsText(shape) + " (dim " + std::to_string(d) + ")";
      return std::nullopt;
    }
  }
  return out;
}

std::optional<ShapeDims> resolveStack(const ShapeDims& part, int64_t n, int64_t* axis, std::string* why) {
  int64_t r = int64_t(part.size());
  int64_t a = *axis < 0 ? *axis + r + 1 : *axis;
  if (a < 0 || a > r || n <= 0) {
    *why = n <= 0 ? "has nothing to stack" : "axis " + std::to_string(*axis) + " is out of range for parts " + dimsText(part);
    return std::nullopt;
  }
  *axis = a;
  ShapeDims out = part;
  out.insert(out.begin() + a, n);
  return out;
}

std::optional<ShapeDims> resolveGatherNd(const ShapeDims& x, const ShapeDims& index, std::string* why) {
  if (index.empty() || index.back() < 0 || index.back() > int64_t(x.size())) {
    *why = "Index " + dimsText(index) + " should end in a dim k <= rank of X " + dimsText(x);
    return std::nullopt;
  }
  ShapeDims out(index.begin(), index.end() - 1);
  out.insert(out.end(), x.begin() + index.back(), x.end());
  return out;
}

}  // namespace spopt
