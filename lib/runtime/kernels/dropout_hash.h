#pragma once
// The dropout keep-mask hash, shared by the CPU kernel (dropout.cpp) and the CUDA kernel
// (runtime/nccl/device_kernels.cu) so both draw bit-identical masks. See dropout.cpp for the rule.
#include <cstdint>

#if defined(__CUDACC__)
#define SPOPT_HOST_DEVICE __host__ __device__
#else
#define SPOPT_HOST_DEVICE
#endif

namespace spopt::rt::dropout_hash {

// splitmix64's finaliser: a bijective 64-bit avalanche.
SPOPT_HOST_DEVICE inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The per-op stream: mix(mix(mix(mix(replay_seed) ^ op_seed) ^ mask_name_hash) ^ rank).
SPOPT_HOST_DEVICE inline uint64_t stream(uint64_t replay_seed, uint64_t op_seed, uint64_t mask_name_hash, uint64_t rank) {
  return mix(mix(mix(mix(replay_seed) ^ op_seed) ^ mask_name_hash) ^ rank);
}

// Element i is kept iff its 53-bit draw >= threshold = ceil(p * 2^53).
SPOPT_HOST_DEVICE inline bool keep(uint64_t stream, int64_t i, uint64_t threshold) {
  return (mix(stream + uint64_t(i + 1) * 0x9E3779B97F4A7C15ULL) >> 11) >= threshold;
}

}  // namespace spopt::rt::dropout_hash
