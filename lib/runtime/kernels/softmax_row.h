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

}  // namespace spopt::rt
