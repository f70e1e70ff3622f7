#pragma once
// The softmax of one row, shared by softmax (activation.cpp) and softmax_with_cross_entropy
// (train_language.cpp): max-shifted exponentials (fastExp for float32, libm for float64), the
// denominator summed in double over 8 lanes.
#include <cmath>
#include <cstdint>
#include <cstring>
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

// The maximum of a contiguous row, n >= 1: four vectors of 64 bytes side by side (laneMax's one
// vector of lanes waits on its previous max at every step: a third of the load rate), folded
// pairwise. NaN is skipped unless x[0] is NaN, as in laneMax. Of +0 and -0 it may keep the other
// one; the max only enters the outputs as x - max, whose zeros both give e^0 = 1 and a loss of
// log(sum) - 0.
template <typename T> T contiguousMax(const T* x, int64_t n) {
  constexpr int W = 64 / sizeof(T);
  typedef T V __attribute__((vector_size(64)));
  if (n < 4 * W) return laneMax<T>(n, [&](int64_t k) { return x[k]; });
  V acc[4];
  for (V& a : acc) a = V{} + x[0];
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W)
    for (int g = 0; g < 4; ++g) {
      V v;
      std::memcpy(&v, x + i + g * W, sizeof v);
      acc[g] = v > acc[g] ? v : acc[g];
    }
  V m = acc[0] > acc[1] ? acc[0] : acc[1], m2 = acc[2] > acc[3] ? acc[2] : acc[3];
  m = m > m2 ? m : m2;
  T lane[W];
  std::memcpy(lane, &m, sizeof lane);
  for (int half = W / 2; half >= 1; half /= 2)  // log2(W) steps, not W - 1 in a chain
    for (int l = 0; l < half; ++l) lane[l] = lane[l + half] > lane[l] ? lane[l + half] : lane[l];
  T best = lane[0];
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
}

// o[k] = e^(x[k] - m) over a contiguous row: fastExp sixteen lanes at a time for float32 (the
// bits of the scalar fastExp), libm for float64.
template <typename T> void shiftedExp(const T* x, T* o, int64_t n, T m) {
  int64_t k = 0;
  if constexpr (std::is_same_v<T, float>) {
    for (; k + 16 <= n; k += 16) {
      Floats16 v;
      std::memcpy(&v, x + k, sizeof v);
      v = fastExp(v - m);
      std::memcpy(o + k, &v, sizeof v);
    }
    for (; k < n; ++k) o[k] = fastExp(x[k] - m);
  } else {
    for (; k < n; ++k) o[k] = std::exp(x[k] - m);
  }
}

// One softmax row of `len` (>= 1) elements `st` apart; Contiguous (st == 1, the usual last axis)
// is a compile-time case so its loops vectorise. Returns the row's max and the sum of the shifted
// exponentials (log-softmax is x - max - log sum).
template <typename T, bool Contiguous>
SoftmaxRowStats softmaxRow(const T* row, T* orow, int64_t len, int64_t stride) {
  const int64_t st = Contiguous ? 1 : stride;
  T m;
  if constexpr (Contiguous) {
    m = contiguousMax(row, len);
    shiftedExp(row, orow, len, m);
  } else {
    m = laneMax<T>(len, [&](int64_t k) { return row[k * st]; });
    for (int64_t k = 0; k < len; ++k) {
      if constexpr (std::is_same_v<T, float>) orow[k * st] = fastExp(row[k * st] - m);
      else orow[k * st] = std::exp(row[k * st] - m);
    }
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
      m[k] = contiguousMax(x + (r + k) * len, len);
      shiftedExp(x + (r + k) * len, o + (r + k) * len, len, m[k]);
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
