#include "runtime/kernels/broadcast.h"

namespace spopt::rt {

BroadcastPlan planBroadcast(const KernelContext& c, const std::vector<int64_t>& x,
                            const std::vector<int64_t>& y, int64_t axis) {
  auto fail = [&](const std::string& why) -> void {
    kernelFail(c, "X " + shapeStr(x) + " and Y " + shapeStr(y) + " do not broadcast with axis=" +
                      std::to_string(axis) + (why.empty() ? "" : ": " + why));
  };
  // Line the shorter operand up inside the longer one, starting at `axis`.
  bool y_shorter = y.size() <= x.size();
  std::vector<int64_t> longer = y_shorter ? x : y, shorter = y_shorter ? y : x;
  // Paddle drops trailing 1s of the shorter operand when they would not fit.
  int64_t start = axis == -1 ? int64_t(longer.size() - shorter.size()) : axis;
  while (axis != -1 && !shorter.empty() && shorter.back() == 1 && start + int64_t(shorter.size()) > int64_t(longer.size()))
    shorter.pop_back();
  if (axis == -1) start = int64_t(longer.size() - shorter.size());
  if (start < 0 || start + int64_t(shorter.size()) > int64_t(longer.size())) fail("axis out of range");
  size_t rank = longer.size();
  std::vector<int64_t> padded(rank, 1);
  for (size_t i = 0; i < shorter.size(); ++i) padded[size_t(start) + i] = shorter[i];
  const std::vector<int64_t>& xa = y_shorter ? longer : padded;
  const std::vector<int64_t>& ya = y_shorter ? padded : longer;

  BroadcastPlan p;
  p.out_shape.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (xa[d] != ya[d] && xa[d] != 1 && ya[d] != 1) fail("dim " + std::to_string(d) + " differs");
    p.out_shape[d] = xa[d] == 1 ? ya[d] : xa[d];
  }
  // Collapse: drop size-1 output dims, merge neighbours with the same (x advances, y advances).
  struct Dim {
    int64_t size;
    bool xs, ys;
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < rank; ++d) {
    if (p.out_shape[d] == 1) continue;
    bool xs = xa[d] != 1, ys = ya[d] != 1;
    if (!xs) p.x_full = false;
    if (!ys) p.y_full = false;
    if (!dims.empty() && dims.back().xs == xs && dims.back().ys == ys)
      dims.back().size *= p.out_shape[d];
    else
      dims.push_back({p.out_shape[d], xs, ys});
  }
  size_t n = dims.size();
  p.sizes.resize(n);
  p.x_strides.assign(n, 0);
  p.y_strides.assign(n, 0);
  p.out_strides.assign(n, 0);
  int64_t sx = 1, sy = 1, so = 1;
  for (size_t d = n; d-- > 0;) {
    p.sizes[d] = dims[d].size;
    p.out_strides[d] = so;
    so *= dims[d].size;
    if (dims[d].xs) {
      p.x_strides[d] = sx;
      sx *= dims[d].size;
    }
    if (dims[d].ys) {
      p.y_strides[d] = sy;
      sy *= dims[d].size;
    }
  }
  return p;
}

}  // namespace spopt::rt
