#pragma once
// The softmax of one row, shared by softmax (activation.cpp) and softmax_with_cross_entropy
// (train_language.cpp): max-shifted exponentials and their sum in the tensor's own type, as Paddle
// computes them (fastExp and float32 lanes for float32; libm and laneSum in double for float64).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/float_sum.h"
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

// float32: o[k] = fastExp(x[k] - m) for the row's `n` elements `st` apart, returning their sum
// accumulated in float32, as Paddle's CPU softmax does (phi::funcs::SoftmaxFunctor sums e^x with
// vec_sum<float>, float lanes). One pass: each vector of exponentials is stored and added while
// in registers (sumFloat32's order: the same bits for the contiguous and the strided row, and
// fastExp's vector and scalar forms agree bitwise, so the bits do not depend on the row's layout).
template <bool Contiguous> float expSumF32(const float* x, float* o, int64_t n, int64_t stride, float m) {
  const int64_t st = Contiguous ? 1 : stride;
  auto expAt = [&](int64_t k) {
    Floats16 v;
    if constexpr (Contiguous) std::memcpy(&v, x + k, sizeof v);
    else
      for (int l = 0; l < 16; ++l) v[l] = x[(k + l) * st];
    v = fastExp(v - m);
    if constexpr (Contiguous) std::memcpy(o + k, &v, sizeof v);
    else
      for (int l = 0; l < 16; ++l) o[(k + l) * st] = v[l];
    return v;
  };
  return sumFloat32(n, expAt, [&](int64_t k) {
    const float e = fastExp(x[k * st] - m);
    o[k * st] = e;
    return e;
  });
}

// float64: o[k] = e^(x[k] - m) by libm, summed by laneSum in double.
template <bool Contiguous> double expSumF64(const double* x, double* o, int64_t n, int64_t stride, double m) {
  const int64_t st = Contiguous ? 1 : stride;
  for (int64_t k = 0; k < n; ++k) o[k * st] = std::exp(x[k * st] - m);
  return laneSum(n, [&](int64_t k) { return o[k * st]; });
}

// One softmax row of `len` (>= 1) elements `stride` apart, in its three steps; Contiguous (stride
// 1, the usual last axis) is a compile-time case so its loops vectorise. The max, then the shifted
// exponentials and their sum in T (float32 as Paddle computes it, above), then a multiply by
// 1 / sum in T.
template <typename T, bool Contiguous> T softmaxRowMax(const T* row, int64_t len, int64_t stride) {
  if constexpr (Contiguous) return contiguousMax(row, len);
  else return laneMax<T>(len, [&](int64_t k) { return row[k * stride]; });
}
template <typename T, bool Contiguous> T softmaxRowExpSum(const T* row, T* orow, int64_t len, int64_t stride, T m) {
  if constexpr (std::is_same_v<T, float>) return expSumF32<Contiguous>(row, orow, len, stride, m);
  else return expSumF64<Contiguous>(row, orow, len, stride, m);
}
template <typename T, bool Contiguous> void softmaxRowScale(T* orow, int64_t len, int64_t stride, T sum) {
  const int64_t st = Contiguous ? 1 : stride;
  const T inv = T(1) / sum;
  for (int64_t k = 0; k < len; ++k) orow[k * st] *= inv;
}

// The three steps on one row. Returns the row's max and the sum (log-softmax is x - max - log sum).
template <typename T, bool Contiguous>
SoftmaxRowStats softmaxRow(const T* row, T* orow, int64_t len, int64_t stride) {
  const int64_t st = Contiguous ? 1 : stride;
  const T m = softmaxRowMax<T, Contiguous>(row, len, st);
  const T sum = softmaxRowExpSum<T, Contiguous>(row, orow, len, st, m);
  softmaxRowScale<T, Contiguous>(orow, len, st, sum);
  return {double(m), double(sum)};
}

// softmaxRow over `rows` consecutive contiguous rows of `len` (>= 1) elements, stats[r] each
// (may be null). Rows go in groups of four, each step taken for the four before the next: a short
// row's steps are each a chain of dependent vector operations (the exponential's polynomial, the
// lane trees, the division), and four independent chains side by side keep the vector units busy
// where one leaves them waiting. Each row's operations are softmaxRow's, so the bits are too.
template <typename T> void softmaxRows(const T* x, T* o, int64_t len, int64_t rows, SoftmaxRowStats* stats) {
  constexpr int64_t kGroup = 4;
  int64_t r = 0;
  for (; r + kGroup <= rows; r += kGroup) {
    T m[kGroup], sum[kGroup];
    for (int64_t g = 0; g < kGroup; ++g) m[g] = softmaxRowMax<T, true>(x + (r + g) * len, len, 1);
    for (int64_t g = 0; g < kGroup; ++g) sum[g] = softmaxRowExpSum<T, true>(x + (r + g) * len, o + (r + g) * len, len, 1, m[g]);
    for (int64_t g = 0; g < kGroup; ++g) {
      softmaxRowScale<T, true>(o + (r + g) * len, len, 1, sum[g]);
      if (stats) stats[r + g] = {double(m[g]), double(sum[g])};
    }
  }
  for (; r < rows; ++r) {
    SoftmaxRowStats st = softmaxRow<T, true>(x + r * len, o + r * len, len, 1);
    if (stats) stats[r] = st;
  }
}

}  // namespace spopt::rt
