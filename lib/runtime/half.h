#pragma once
// float16 and bfloat16 as replay holds them: float32 storage whose every value is one the format
// can represent. Kernels compute in float32 (accumulating in float or double as they do for
// float32); whatever a half var stores — a kernel's or a collective's result, a generated or
// loaded input — is rounded once, to nearest with ties to even: bfloat16 keeps float32's range
// (overflow only where float32's rounding overflows), float16 overflows to ±inf from 65520 on and
// has IEEE subnormals down to 2^-24. NaN stays NaN (quiet), with its sign. This is what Paddle's
// phi::dtype::float16 / bfloat16 conversions from float do, so a mixed-precision job replays its
// own numbers, not a float32 job's.
#include <bit>
#include <cstdint>

#include "ir/ir.h"

namespace spopt::rt {

inline uint16_t floatToBFloat16Bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN: keep it quiet
  u += 0x7fffu + ((u >> 16) & 1u);  // ties to even; a carry into the exponent is the correct rounding
  return uint16_t(u >> 16);
}
inline float bfloat16BitsToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

inline uint16_t floatToHalfBits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // from 65520 (half-way above 65504, to even) on: inf
  if (ax < 0x38800000u) {
    // Below 2^-14: a subnormal m * 2^-24. Adding 0.5 (whose ulp is 2^-24) lets the FPU round m to
    // nearest-even; m = 1024 is the smallest normal, which the same bits encode.
    float v = std::bit_cast<float>(ax) + 0.5f;
    return sign | uint16_t(std::bit_cast<uint32_t>(v) - 0x3f000000u);
  }
  // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest-even.
  ax += 0xc8000fffu + ((ax >> 13) & 1u);
  return sign | uint16_t(ax >> 13);
}
inline float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    float v = float(m) * 0x1.0p-24f;  // exact: m < 2^10
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

inline float roundToBFloat16(float f) { return bfloat16BitsToFloat(floatToBFloat16Bits(f)); }
inline float roundToFloat16(float f) { return halfBitsToFloat(floatToHalfBits(f)); }

// Whether replay rounds what a var of this dtype stores (float16, bfloat16).
inline bool isHalfDType(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// Rounds n float32 values in place to `t` when it is float16 or bfloat16 (else nothing).
inline void roundToDType(DType t, float* p, int64_t n) {
  if (t == DType::BFloat16)
    for (int64_t i = 0; i < n; ++i) p[i] = roundToBFloat16(p[i]);
  else if (t == DType::Float16)
    for (int64_t i = 0; i < n; ++i) p[i] = roundToFloat16(p[i]);
}

}  // namespace spopt::rt
