#pragma once
// Overflow-checked size arithmetic: every element count and byte size of a tensor goes through
// here (ir shapes, verify, analysis/memory, liveness, cost model, runtime allocation, replay
// planning). A product of dims can wrap int64 (a [2^31, 2^31] float32 var is 2^64 bytes) and a
// wrapped size is a small buffer that a kernel then overruns; nullopt says "does not fit".
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

namespace spopt {

inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Adds without wrapping: a sum past int64 stays at the int64 maximum (a total that only has to
// exceed a budget, never to be exact past it).
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  auto r = checkedAdd(a < 0 ? 0 : a, b < 0 ? 0 : b);
  return r ? *r : std::numeric_limits<int64_t>::max();
}

// The element count of `dims`; nullopt when a dim is negative (unknown, -1) or the product
// overflows int64. A zero dim gives 0 whatever the others are.
inline std::optional<int64_t> checkedNumel(std::span<const int64_t> dims) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;
    if (!overflow) {
      auto m = checkedMul(n, d);
      if (m) n = *m;
      else overflow = true;  // keep looking: a later 0 dim makes the product 0
    }
  }
  if (overflow) return std::nullopt;
  return n;
}

// Element count x element size in bytes; nullopt as for checkedNumel or when the bytes overflow.
inline std::optional<int64_t> checkedBytes(std::span<const int64_t> dims, size_t element_size) {
  auto n = checkedNumel(dims);
  if (!n) return std::nullopt;
  return checkedMul(*n, int64_t(element_size));
}

}  // namespace spopt
