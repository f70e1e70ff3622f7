#pragma once
// The data movement of transpose2 and transpose2_grad, for any element size.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace spopt::rt {

// Copies `in` (row-major, shape `in_shape`, `elem` bytes per element) into `out` so that output
// dim i is input dim perm[i]. `in` and `out` must not overlap.
void permute(const std::byte* in, const std::vector<int64_t>& in_shape, const std::vector<int64_t>& perm,
             std::byte* out, size_t elem);

}  // namespace spopt::rt
