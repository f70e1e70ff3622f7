#pragma once
// float32 transcendental functions in plain arithmetic, so that loops calling them vectorise
// (libm's expf/erff/tanhf are opaque calls, and a transformer's gelu and softmax would otherwise
// cost a sizeable fraction of its GEMM time). float64 kernels keep using libm: they are the
// reference precision. Accuracy is tested in tests/unit/kernels_fast_math.cpp.
#include <algorithm>
#include <bit>
#include <cstdint>

namespace spopt::rt {

// e^x, relative error a few float ulps. x = n ln2 + r with |r| <= ln2/2 (n rounded by the
// 1.5 * 2^23 trick, exact in round-to-nearest); e^r by its Taylor polynomial to degree 7
// (truncation below 6e-9); 2^n assembled in the exponent bits. x is clamped to [-87, 88] so n
// stays in the normal range: results below e^-87 (1.6e-38) round up to it, above e^88 saturate.
inline float fastExp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;  // ln2 split hi + lo
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>(uint32_t(int32_t(n) + 127) << 23);
  return p * scale;
}

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
