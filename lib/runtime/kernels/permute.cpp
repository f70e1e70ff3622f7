#include "runtime/kernels/permute.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/kernels/kernel_util.h"

namespace spopt::rt {
namespace {

using Dims = std::vector<int64_t>;

// Copies a permuted tensor whose output-innermost dim L is strided in the input: the input's
// contiguous dim q and L are copied in B x B tiles so that both the strided reads and the
// contiguous writes of a tile stay in L1; the remaining dims are walked with an odometer.
template <typename E>
void tiledPermute(const E* in, E* out, const Dims& sizes, const Dims& strides, size_t q) {
  constexpr int64_t B = 32;
  size_t rank = sizes.size(), L = rank - 1;
  Dims out_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) out_strides[d - 1] = out_strides[d] * sizes[d];
  int64_t nq = sizes[q], nl = sizes[L], sl = strides[L], oq = out_strides[q];
  std::vector<size_t> others;
  int64_t outer = 1;
  for (size_t d = 0; d < L; ++d)
    if (d != q) {
      others.push_back(d);
      outer *= sizes[d];
    }
  Dims idx(others.size(), 0);
  int64_t bi = 0, bo = 0;
  for (int64_t it = 0; it < outer; ++it) {
    for (int64_t i0 = 0; i0 < nq; i0 += B)
      for (int64_t j0 = 0; j0 < nl; j0 += B) {
        int64_t i1 = std::min(nq, i0 + B), j1 = std::min(nl, j0 + B);
        for (int64_t i = i0; i < i1; ++i) {
          const E* src = in + bi + i;
          E* dst = out + bo + i * oq;
          for (int64_t j = j0; j < j1; ++j) dst[j] = src[j * sl];
        }
      }
    for (size_t k = others.size(); k-- > 0;) {
      size_t d = others[k];
      bi += strides[d];
      bo += out_strides[d];
      if (++idx[k] < sizes[d]) break;
      bi -= strides[d] * sizes[d];
      bo -= out_strides[d] * sizes[d];
      idx[k] = 0;
    }
  }
}

}  // namespace

// Copies `in` (shape `in_shape`) into `out` permuted by `perm` (out dim i = in dim perm[i]).
// Adjacent output dims that are adjacent in the input merge first; an inner block that keeps
// its order is then copied with memcpy, any other permutation in tiles.
void permute(const std::byte* in, const std::vector<int64_t>& in_shape, const std::vector<int64_t>& perm, std::byte* out,
             size_t elem) {
  size_t rank = in_shape.size();
  Dims in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * in_shape[d];
  // Collapse runs of the permutation that are consecutive in the input, dropping size-1 dims.
  Dims sizes, strides;
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = perm[i];
    if (in_shape[size_t(a)] == 1) continue;
    if (!sizes.empty() && strides.back() == in_strides[size_t(a)] * in_shape[size_t(a)]) {
      sizes.back() *= in_shape[size_t(a)];
      strides.back() = in_strides[size_t(a)];
    } else {
      sizes.push_back(in_shape[size_t(a)]);
      strides.push_back(in_strides[size_t(a)]);
    }
  }
  int64_t total = product(in_shape);
  if (total == 0) return;
  if (sizes.empty() || (sizes.size() == 1 && strides[0] == 1)) {
    std::memcpy(out, in, size_t(total) * elem);
    return;
  }
  size_t inner = sizes.size() - 1;
  if (strides[inner] != 1) {
    // The input's contiguous dim (stride 1) always survives collapsing.
    size_t q = size_t(std::find(strides.begin(), strides.end(), 1) - strides.begin());
    switch (elem) {
      case 1: tiledPermute(reinterpret_cast<const uint8_t*>(in), reinterpret_cast<uint8_t*>(out), sizes, strides, q); return;
      case 4: tiledPermute(reinterpret_cast<const uint32_t*>(in), reinterpret_cast<uint32_t*>(out), sizes, strides, q); return;
      case 8: tiledPermute(reinterpret_cast<const uint64_t*>(in), reinterpret_cast<uint64_t*>(out), sizes, strides, q); return;
      default: throw std::logic_error("permute: element size " + std::to_string(elem));
    }
  }
  // The inner block is contiguous in the input: memcpy per block.
  int64_t n = sizes[inner];
  int64_t outer = total / n;
  Dims idx(inner, 0);
  int64_t off = 0;
  std::byte* o = out;
  for (int64_t it = 0; it < outer; ++it) {
    std::memcpy(o, in + off * int64_t(elem), size_t(n) * elem);
    o += n * int64_t(elem);
    for (size_t d = inner; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
}

}  // namespace spopt::rt
