#pragma once
// The softmax of one row, shared by softmax (activation.cpp) and softmax_with_cross_entropy
// (train_language.cpp): max-shifted exponentials (fastExp for float32, libm for float64), the
// denominator summed in double over 8 lanes.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"

namespace spopt::rt {

struct SoftmaxRowStats {
  double max, sum;
};

// The maximum of f(0..n-1), n >= 1, over 8 independent lanes (vectorisable; max is exact, so
// the result does not depend on the order).
template <typename T, typename F> T laneMax(int64_t n, F&& f) {
  T lane[8];
  for (int l = 0; l < 8; ++l) lane[l] = f(0);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      T v = f(i + l);
      lane[l] = v > lane[l] ? v : lane[l];
    }
  for (; i < n; ++i) lane[0] = f(i) > lane[0] ? f(i) : lane[0];
  T m = lane[0];
  for (int l = 1; l < 8; ++l) m = lane[l] > m ? lane[l] : m;
  return m;
}

// One softmax row of `len` (>= 1) elements `st` apart; Contiguous (st == 1, the usual last axis)
// is a compile-time case so its loops vectorise. Returns the row's max and the sum of the shifted
// exponentials (log-softmax is x - max - log sum).
template <typename T, bool Contiguous>
SoftmaxRowStats softmaxRow(const T* row, T* orow, int64_t len, int64_t stride) {
  const int64_t st = Contiguous ? 1 : stride;
  T m = laneMax<T>(len, [&](int64_t k) { return row[k * st]; });
  for (int64_t k = 0; k < len; ++k) {
    if constexpr (std::is_same_v<T, float>) orow[k * st] = fastExp(row[k * st] - m);
    else orow[k * st] = std::exp(row[k * st] - m);
  }
  const double sum = laneSum(len, [&](int64_t k) { return double(orow[k * st]); });
  T inv = T(1.0 / sum);
  for (int64_t k = 0; k < len; ++k) orow[k * st] *= inv;
  return {double(m), sum};
}

// softmaxRow over `rows` consecutive contiguous rows of `len` (>= 1) elements, stats[r] each
// (may be null). Rows go four at a time, their denominators laneSums side by side (the bits of
// one laneSum per row): a short row's sum is otherwise one add-latency chain after another.
template <typename T> void softmaxRows(const T* x, T* o, int64_t len, int64_t rows, SoftmaxRowStats* stats) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    T m[4];
    for (int k = 0; k < 4; ++k) {
      const T* row = x + (r + k) * len;
      T* orow = o + (r + k) * len;
      m[k] = laneMax<T>(len, [&](int64_t j) { return row[j]; });
      for (int64_t j = 0; j < len; ++j) {
        if constexpr (std::is_same_v<T, float>) orow[j] = fastExp(row[j] - m[k]);
        else orow[j] = std::exp(row[j] - m[k]);
      }
    }
    double sum[4];
    laneSums<4>(len, [&](int k, int64_t j, auto w) { return lanes(w, o + (r + k) * len + j); }, sum);
    for (int k = 0; k < 4; ++k) {
      T* orow = o + (r + k) * len;
      T inv = T(1.0 / sum[k]);
      for (int64_t j = 0; j < len; ++j) orow[j] *= inv;
      if (stats) stats[r + k] = {double(m[k]), sum[k]};
    }
  }
  for (; r < rows; ++r) {
    SoftmaxRowStats st = softmaxRow<T, true>(x + r * len, o + r * len, len, 1);
    if (stats) stats[r] = st;
  }
}

}  // namespace spopt::rt
