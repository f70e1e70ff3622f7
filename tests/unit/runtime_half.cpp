// float16 / bfloat16 rounding (runtime/half.h) on known bit patterns: ties to even, fp16 overflow
// and subnormals, NaN; and Tensor::roundToDType touching only half dtypes.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "runtime/half.h"
#include "runtime/tensor.h"

using namespace spopt;
using namespace spopt::rt;

TEST_CASE("bfloat16 rounds to nearest, ties to even", "[half]") {
  CHECK(floatToBFloat16Bits(1.0f) == 0x3f80);
  // 1 + 2^-8 is half-way between 1 and 1 + 2^-7: to even (1).
  CHECK(roundToBFloat16(1.0f + 0x1.0p-8f) == 1.0f);
  // 1 + 3 * 2^-8 is half-way between 1 + 2^-7 (odd) and 1 + 2^-6: to even (1 + 2^-6).
  CHECK(roundToBFloat16(1.0f + 3 * 0x1.0p-8f) == 1.0f + 0x1.0p-6f);
  // Just above half-way rounds up.
  CHECK(roundToBFloat16(1.0f + 0x1.0p-8f + 0x1.0p-20f) == 1.0f + 0x1.0p-7f);
  CHECK(roundToBFloat16(-1.0f - 0x1.0p-8f - 0x1.0p-20f) == -1.0f - 0x1.0p-7f);
  // The largest float rounds to inf (its carry reaches the exponent), the largest bf16 stays.
  CHECK(std::isinf(roundToBFloat16(std::numeric_limits<float>::max())));
  CHECK(roundToBFloat16(std::bit_cast<float>(0x7f7f0000u)) == std::bit_cast<float>(0x7f7f0000u));
  // A float32 subnormal keeps its top 7 mantissa bits.
  CHECK(floatToBFloat16Bits(std::bit_cast<float>(0x00010000u)) == 0x0001);
  CHECK(std::isnan(roundToBFloat16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(bfloat16BitsToFloat(floatToBFloat16Bits(std::bit_cast<float>(0x7f800001u)))));  // signalling stays NaN
}

TEST_CASE("float16 rounds as IEEE binary16: overflow to inf, subnormals, ties to even", "[half]") {
  CHECK(floatToHalfBits(1.0f) == 0x3c00);
  CHECK(floatToHalfBits(-2.0f) == 0xc000);
  CHECK(floatToHalfBits(65504.0f) == 0x7bff);
  CHECK(roundToFloat16(65519.0f) == 65504.0f);    // below half-way to 65536
  CHECK(floatToHalfBits(65520.0f) == 0x7c00);     // half-way, to even: inf
  CHECK(floatToHalfBits(-70000.0f) == 0xfc00);
  CHECK(roundToFloat16(1.0f + 0x1.0p-11f) == 1.0f);                       // tie to even (down)
  CHECK(roundToFloat16(1.0f + 3 * 0x1.0p-11f) == 1.0f + 0x1.0p-9f);       // tie to even (up)
  CHECK(floatToHalfBits(0x1.0p-24f) == 0x0001);                           // smallest subnormal
  CHECK(floatToHalfBits(0x1.0p-25f) == 0x0000);                           // half of it: tie to even 0
  CHECK(floatToHalfBits(0x1.8p-24f) == 0x0002);                           // 1.5 ulp: tie to even 2
  CHECK(floatToHalfBits(0x1.0p-14f - 0x1.0p-25f) == 0x0400);              // rounds up into the normals
  CHECK(roundToFloat16(3 * 0x1.0p-24f) == 3 * 0x1.0p-24f);
  CHECK(halfBitsToFloat(0x03ff) == 1023 * 0x1.0p-24f);                    // largest subnormal
  CHECK(halfBitsToFloat(0x8001) == -0x1.0p-24f);
  CHECK(std::signbit(roundToFloat16(-0x1.0p-30f)));                       // underflows to -0
  CHECK(std::isnan(roundToFloat16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isinf(halfBitsToFloat(0x7c00)));
  // Every half value survives the round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t b = uint16_t(h);
    if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff)) continue;  // NaNs
    REQUIRE(floatToHalfBits(halfBitsToFloat(b)) == b);
  }
}

TEST_CASE("Tensor::roundToDType rounds half dtypes only", "[half]") {
  const float v = 1.0f + 0x1.0p-10f;  // not a bfloat16, exactly a float16
  for (DType t : {DType::Float32, DType::BFloat16, DType::Float16}) {
    Tensor x(t, {2});
    x.data<float>()[0] = v;
    x.data<float>()[1] = 70000.0f;
    x.roundToDType();
    CAPTURE(dtypeName(t));
    CHECK(x.data<float>()[0] == (t == DType::BFloat16 ? 1.0f : v));
    CHECK(x.data<float>()[1] == (t == DType::Float32 ? 70000.0f : t == DType::BFloat16 ? 70144.0f : std::numeric_limits<float>::infinity()));
  }
}
