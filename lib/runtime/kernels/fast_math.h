#pragma once
// float32 transcendental functions in plain arithmetic, so that loops calling them vectorise
// (libm's expf/erff/tanhf are opaque calls, and a transformer's gelu and softmax would otherwise
// cost a sizeable fraction of its GEMM time). float64 kernels keep using libm: they are the
// reference precision. Accuracy is tested in tests/unit/kernels_fast_math.cpp.
#include <algorithm>
#include <bit>
#include <cstdint>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace spopt::rt {

// Without AVX-512, GCC notes that a 64-byte vector passed by value has another ABI: the functions
// taking one here are inline, never called across objects built with other flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// Sixteen float32 or int32 lanes (GCC/clang vector extension): the exponential of a softmax row
// written on whole vectors, as GCC does not vectorise its clamp well (below).
using Floats16 = float __attribute__((vector_size(64)));
using Ints16 = int32_t __attribute__((vector_size(64)));

namespace fast_math_detail {

// std::min(std::max(x, -87), 88): NaN passes through. On AVX-512 that is one vmaxps and one
// vminps with the bound first (the operand order that returns x for NaN); for vectors GCC emits
// a compare and a masked move for each, a fifth of the exponential's time.
inline float clampExpArgument(float x) { return std::min(std::max(x, -87.0f), 88.0f); }
inline Floats16 clampExpArgument(Floats16 x) {
#ifdef __AVX512F__
  // The masked forms with every lane set: the plain ones read an undefined vector that GCC 12
  // reports as maybe-uninitialized.
  const __m512 lo = _mm512_set1_ps(-87.0f), hi = _mm512_set1_ps(88.0f);
  x = Floats16(_mm512_mask_max_ps(lo, __mmask16(0xffff), lo, __m512(x)));
  return Floats16(_mm512_mask_min_ps(hi, __mmask16(0xffff), hi, __m512(x)));
#else
  x = x < -87.0f ? -87.0f : x;
  return 88.0f < x ? 88.0f : x;
#endif
}
// n is a whole number in [-126, 127] after the clamp, or NaN: 1.5 * 2^23 + n is exact, and its
// bits less those of 1.5 * 2^23 (0x4B400000) are n. int32_t(n) gives the same for every number
// but is undefined for NaN (UBSan stops on it); the vector conversion is defined for every lane.
inline int32_t truncated(float n) { return std::bit_cast<int32_t>(n + 12582912.0f) - 0x4B400000; }
inline Ints16 truncated(Floats16 n) { return __builtin_convertvector(n, Ints16); }
inline float fromBits(int32_t b) { return std::bit_cast<float>(b); }
inline Floats16 fromBits(Ints16 b) { return std::bit_cast<Floats16>(b); }

// fastExp on a float or on each lane of a Floats16, the same operations in the same order (so
// the same bits: tests/unit/kernels_fast_math.cpp compares them).
template <typename V> [[gnu::always_inline]] inline V exp(V x) {
  x = clampExpArgument(x);
  const V n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const V r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;  // ln2 split hi + lo
  V p = V{} + 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const V scale = fromBits((truncated(n) + 127) << 23);  // n + 127 >= 1 after the clamp
  return p * scale;
}

}  // namespace fast_math_detail

// e^x, relative error a few float ulps. x = n ln2 + r with |r| <= ln2/2 (n rounded by the
// 1.5 * 2^23 trick, exact in round-to-nearest); e^r by its Taylor polynomial to degree 7
// (truncation below 6e-9); 2^n assembled in the exponent bits. x is clamped to [-87, 88] so n
// stays in the normal range: results below e^-87 (1.6e-38) round up to it, above e^88 saturate.
inline float fastExp(float x) { return fast_math_detail::exp(x); }
// fastExp of each lane, with the bits of the scalar one.
inline Floats16 fastExp(Floats16 x) { return fast_math_detail::exp(x); }

#pragma GCC diagnostic pop

// erfc(z) for z >= 0 with relative error below ~2e-7: the Chebyshev-fitted form
// t exp(-z^2 + P(t)), t = 1 / (1 + z/2), from Numerical Recipes (erfcc). Relative accuracy holds
// in the tail, which matters for gelu at large negative x.
inline float erfcNonNegative(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * fastExp(-z * z + p);
}

// The standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2.
inline float normalCdf(float x) {
  const float half_tail = 0.5f * erfcNonNegative((x < 0 ? -x : x) * 0.70710678118654752f);
  return x < 0 ? half_tail : 1.0f - half_tail;
}

// The logistic function 1 / (1 + e^-x); 0.5 (1 + tanh(u)) = sigmoid(2u) without cancellation.
inline float sigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }

}  // namespace spopt::rt
