#pragma once
// Paddle's elementwise broadcasting: Y's dims line up with X's starting at `axis` (-1: X's trailing
// dims), and a dim of 1 on either side broadcasts. A BroadcastPlan collapses the output into runs
// of adjacent dims with the same broadcast pattern, so the innermost loop is a contiguous run where
// each operand either advances (stride 1) or stays (stride 0) and the compiler can vectorise it.
#include <cstdint>
#include <vector>

#include "runtime/kernels/kernel_util.h"

namespace spopt::rt {

struct BroadcastPlan {
  std::vector<int64_t> out_shape;
  // Collapsed dims, outermost first; the last one is the inner run.
  std::vector<int64_t> sizes, x_strides, y_strides, out_strides;
  bool x_full = true, y_full = true;  // operand has the output's element count (no reduction)

  // Calls f(x_offset, y_offset, out_offset, n, x_step, y_step) for every inner run, in out order.
  template <typename F> void forEachRun(F&& f) const {
    if (sizes.empty()) {
      f(int64_t(0), int64_t(0), int64_t(0), int64_t(1), int64_t(0), int64_t(0));
      return;
    }
    size_t inner = sizes.size() - 1;
    int64_t n = sizes[inner], sx = x_strides[inner], sy = y_strides[inner];
    int64_t outer = 1;
    for (size_t d = 0; d < inner; ++d) outer *= sizes[d];
    std::vector<int64_t> idx(inner, 0);
    int64_t ox = 0, oy = 0, oo = 0;
    for (int64_t it = 0; it < outer; ++it) {
      f(ox, oy, oo, n, sx, sy);
      for (size_t d = inner; d-- > 0;) {
        ox += x_strides[d];
        oy += y_strides[d];
        oo += out_strides[d];
        if (++idx[d] < sizes[d]) break;
        ox -= x_strides[d] * sizes[d];
        oy -= y_strides[d] * sizes[d];
        oo -= out_strides[d] * sizes[d];
        idx[d] = 0;
      }
    }
  }
};

// Fails with a KernelError naming both shapes when they do not broadcast.
BroadcastPlan planBroadcast(const KernelContext& c, const std::vector<int64_t>& x,
                            const std::vector<int64_t>& y, int64_t axis);

}  // namespace spopt::rt
