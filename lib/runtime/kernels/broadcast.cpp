#include "runtime/kernels/broadcast.h"

#include "ops/shape_math.h"

namespace spopt::rt {

BroadcastPlan planBroadcast(const KernelContext& c, const std::vector<int64_t>& x,
                            const std::vector<int64_t>& y, int64_t axis) {
  auto fail = [&](const std::string& why) -> void {
    kernelFail(c, "X " + shapeStr(x) + " and Y " + shapeStr(y) + " do not broadcast with axis=" +
                      std::to_string(axis) + (why.empty() ? "" : ": " + why));
  };
  // The shape rule is shared with the verifier (ops/shape_math.h).
  std::string why;
  auto aligned = alignBroadcast(x, y, axis, &why);
  if (!aligned) fail(why);
  const std::vector<int64_t>& xa = aligned->x;
  const std::vector<int64_t>& ya = aligned->y;
  size_t rank = aligned->out.size();
  BroadcastPlan p;
  p.out_shape = aligned->out;
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
