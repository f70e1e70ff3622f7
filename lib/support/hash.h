#pragma once
// Small deterministic hashes that replay's values depend on (program inputs, dropout masks, the
// report's checksums): one definition, so every backend computes the same bits.
#include <cstdint>
#include <string_view>

namespace spopt {

// FNV-1a, 64-bit.
constexpr uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// splitmix64's finaliser: a bijective 64-bit avalanche.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// splitmix64: the golden-ratio increment, then the finaliser.
constexpr uint64_t splitmix64(uint64_t x) { return mix64(x + 0x9e3779b97f4a7c15ull); }

}  // namespace spopt
