#include "runtime/kernels/pool_3x3s2.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace spopt::rt {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// std::max(a, b) as the general loops take it: b only when greater, so NaN is skipped and of
// +0 and -0 the first is kept. Grouping a window's row-major sequence by rows keeps its bits.
inline float maxOf(float a, float b) { return a < b ? b : a; }

// One input row split by column parity: odd[j] is column 2 j - 1, even[j] column 2 j. Window ox
// reads columns 2 ox - 1, 2 ox, 2 ox + 1 = odd[ox], even[ox], odd[ox + 1]: unit-stride loads in
// the loops over output columns, where reading the row itself at stride 2 costs a permute per
// operand per vector (there are nine). Columns outside the row (-1, and past the edge for the
// last window under ceil_mode) are NaN: maxOf skips NaN and NaN equals no maximum, as the general
// loops skip what lies outside.
struct SplitRow {
  const float *odd, *even;
};

// The split rows of one plane, each input row split once though two output rows read it; rows
// outside the plane (a window's padding) are all NaN.
class SplitRows {
 public:
  explicit SplitRows(const Window2d& w)
      : width_(w.w.in), height_(w.h.in), out_width_(w.w.out), nan_(size_t(w.w.out + 1), kNaN) {
    for (auto& s : slots_) s.assign(size_t(2 * (out_width_ + 1)), kNaN);
  }
  void newPlane() { std::fill(std::begin(row_), std::end(row_), -1); }
  SplitRow of(const float* plane, int64_t iy) {
    if (iy < 0 || iy >= height_) return {nan_.data(), nan_.data()};
    const size_t s = size_t(iy % 3);
    float* odd = slots_[s].data();
    float* even = odd + out_width_ + 1;
    if (row_[s] != iy) split(plane + iy * width_, odd, even), row_[s] = iy;
    return {odd, even};
  }

 private:
  // odd[0] (column -1) stays NaN, as do the entries past the row's last column.
  void split(const float* row, float* odd, float* even) const {
    const int64_t odd_n = std::min(out_width_, width_ / 2), even_n = std::min(out_width_, (width_ + 1) / 2);
    // One loop for both (odd_n <= even_n): each pair of columns is loaded once.
    for (int64_t j = 0; j < odd_n; ++j) {
      even[j] = row[2 * j];
      odd[j + 1] = row[2 * j + 1];
    }
    for (int64_t j = odd_n; j < even_n; ++j) even[j] = row[2 * j];
  }
  int64_t width_, height_, out_width_;
  std::vector<float> slots_[3], nan_;
  int64_t row_[3] = {-1, -1, -1};
};

// The input rows of output row oy: 2 oy - 1 + dy for dy = 0, 1, 2.
struct WindowRows {
  SplitRow r[3];
  WindowRows(SplitRows& rows, const float* plane, int64_t oy) {
    for (int dy = 0; dy < 3; ++dy) r[dy] = rows.of(plane, 2 * oy - 1 + dy);
  }
};

// The max of a window's row from -inf in column order, as the general loops take it.
inline float windowRowMax(const SplitRow& r, int64_t ox) { return maxOf(maxOf(maxOf(kMinusInf, r.odd[ox]), r.even[ox]), r.odd[ox + 1]); }

}  // namespace

bool isMax3x3Stride2(const Window2d& w) {
  for (const WindowDim* d : {&w.h, &w.w})
    if (d->k != 3 || d->stride != 2 || d->pad_before != 1 || d->dilation != 1 || d->in < 1) return false;
  return true;
}

void maxPool3x3Stride2(const Window2d& w, int64_t planes, const float* x, float* out) {
  const int64_t ow = w.w.out, in_plane = w.h.in * w.w.in, out_plane = w.h.out * ow;
  SplitRows rows(w);
  for (int64_t pl = 0; pl < planes; ++pl) {
    rows.newPlane();
    for (int64_t oy = 0; oy < w.h.out; ++oy) {
      const WindowRows win(rows, x + pl * in_plane, oy);
      float* o = out + pl * out_plane + oy * ow;
      for (int64_t ox = 0; ox < ow; ++ox)
        o[ox] = maxOf(maxOf(maxOf(kMinusInf, windowRowMax(win.r[0], ox)), windowRowMax(win.r[1], ox)), windowRowMax(win.r[2], ox));
    }
  }
}

// The grad of maxPool3x3Stride2's windows, same bits as poolGradPlanes in conv.cpp. The general
// search runs one short loop per window offset over int64 indices; here, on the same split rows
// as the forward (NaN never equals a maximum, as the general loops never look outside a clipped
// window), one vectorised loop over an output row finds each window's first element equal to its
// maximum: the nine offsets checked last to first with a select, so the last one kept is the
// first in row-major order. The adds then run in column order as the general loops'.
void maxPoolGrad3x3Stride2(const Window2d& w, int64_t planes, const float* x, const float* out, const float* dy, float* dx) {
  const int64_t ow = w.w.out, width = w.w.in, height = w.h.in, in_plane = height * width, out_plane = w.h.out * ow;
  SplitRows rows(w);
  // Per output column: where its Out@GRAD goes, as the offset from input element
  // (2 oy - 1, 2 ox - 1) (int32: a third of the row's bytes of the general loops' int64), or -1.
  std::vector<int32_t> at(static_cast<size_t>(ow));
  const int32_t W = int32_t(width), W2 = 2 * W;
  for (int64_t pl = 0; pl < planes; ++pl) {
    rows.newPlane();
    float* d = dx + pl * in_plane;
    int64_t zeroed = 0;  // X@GRAD's rows [0, zeroed) hold zeros or adds already
    for (int64_t oy = 0; oy < w.h.out; ++oy) {
      const WindowRows win(rows, x + pl * in_plane, oy);
      const float *o0 = win.r[0].odd, *e0 = win.r[0].even, *o1 = win.r[1].odd, *e1 = win.r[1].even;
      const float *o2 = win.r[2].odd, *e2 = win.r[2].even;
      const float* m = out + pl * out_plane + oy * ow;
      int32_t* a = at.data();
      for (int64_t ox = 0; ox < ow; ++ox) {
        const float v = m[ox];
        int32_t k = -1;
        k = o2[ox + 1] == v ? W2 + 2 : k;
        k = e2[ox] == v ? W2 + 1 : k;
        k = o2[ox] == v ? W2 : k;
        k = o1[ox + 1] == v ? W + 2 : k;
        k = e1[ox] == v ? W + 1 : k;
        k = o1[ox] == v ? W : k;
        k = o0[ox + 1] == v ? 2 : k;
        k = e0[ox] == v ? 1 : k;
        k = o0[ox] == v ? 0 : k;
        a[ox] = k;
      }
      // The rows this output row's windows reach are zeroed just before (in cache, no pass of
      // their own), as the general loops' LazyZero.
      const int64_t reach = std::min(2 * oy + 2, height);
      if (reach > zeroed) std::fill(d + zeroed * width, d + reach * width, 0.0f);
      zeroed = std::max(zeroed, reach);
      const int64_t corner = (2 * oy - 1) * width - 1;
      const float* g = dy + pl * out_plane + oy * ow;
      for (int64_t ox = 0; ox < ow; ++ox)
        if (a[ox] >= 0) d[corner + 2 * ox + a[ox]] += g[ox];
    }
    if (height > zeroed) std::fill(d + zeroed * width, d + in_plane, 0.0f);
  }
}

}  // namespace spopt::rt
