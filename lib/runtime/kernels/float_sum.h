#pragma once
// Sums of float32 rows in float32, as Paddle's CPU kernels take them (vec_sum<float> and the jit
// kernels add into float vector lanes): softmax's exponentials, layer_norm's mean and variance.
#include <cstdint>
#include <cstring>

#include "runtime/kernels/fast_math.h"

namespace spopt::rt {

// The sum of a Floats16's lanes in a fixed tree (halves added pairwise), so every row with the
// same partial sums gets the same bits.
inline float laneTreeSum(Floats16 v) {
  typedef float F8 __attribute__((vector_size(32)));
  typedef float F4 __attribute__((vector_size(16)));
  F8 lo8, hi8;
  std::memcpy(&lo8, &v, sizeof lo8);
  std::memcpy(&hi8, reinterpret_cast<const char*>(&v) + sizeof lo8, sizeof hi8);
  const F8 s8 = lo8 + hi8;
  F4 lo4, hi4;
  std::memcpy(&lo4, &s8, sizeof lo4);
  std::memcpy(&hi4, reinterpret_cast<const char*>(&s8) + sizeof lo4, sizeof hi4);
  const F4 s4 = lo4 + hi4;
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// The sum of a row's n values in float32: at16(k) gives values k..k+15 (a Floats16), at1(k) value
// k. Values 32j..32j+15 go to one set of sixteen lanes and 32j+16..32j+31 to another (two add
// chains, not one), a last whole 16 to the first, then the lanes' tree sum and the tail in order:
// the bits depend only on the values and n.
template <typename At16, typename At1> float sumFloat32(int64_t n, At16&& at16, At1&& at1) {
  Floats16 acc0 = {}, acc1 = {};
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    acc0 += at16(k);
    acc1 += at16(k + 16);
  }
  if (k + 16 <= n) {
    acc0 += at16(k);
    k += 16;
  }
  float sum = laneTreeSum(acc0 + acc1);
  for (; k < n; ++k) sum += at1(k);
  return sum;
}

}  // namespace spopt::rt
