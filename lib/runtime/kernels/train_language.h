#pragma once
// What the embedding and cross-entropy kernels share with their vocab-parallel forms
// (train_language.cpp, vocab_parallel.cpp): integer ids, the table's geometry, the class axis.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/kernels/kernel_util.h"

namespace spopt::rt {

// Paddle's "no padding row".
constexpr int64_t kNoPadding = -1;

inline int64_t idAt(const Tensor& ids, int64_t i) { return ids.storage() == Storage::I64 ? ids.data<int64_t>()[i] : int64_t(ids.valueAt(i)); }

inline void requireIds(const KernelContext& c, std::string_view name, const Tensor& ids) {
  if (ids.storage() != Storage::I64) kernelFail(c, std::string(name) + " is " + std::string(dtypeName(ids.dtype())) + ", not an integer type");
}

struct Table {
  int64_t rows, width;
};

inline Table tableOf(const KernelContext& c, const Tensor& w) {
  if (w.shape().size() != 2) kernelFail(c, "W " + shapeStr(w.shape()) + " should be 2-D [rows, width]");
  return {w.shape()[0], w.shape()[1]};
}

inline std::vector<int64_t> lookupShape(const Tensor& ids, const Table& t) {
  std::vector<int64_t> s = ids.shape();
  s.push_back(t.width);
  return s;
}

// An embedding lookup's tensors (lookup_table_v2, c_embedding), checked: integer Ids, Out in W's
// storage, shaped Ids' dims + [W's width].
struct Lookup {
  const Tensor &ids, &w;
  Tensor& out;
  Table t;
};
Lookup lookupOf(const KernelContext& c);

// The lookup itself: Out[i] = W[row(i)], zeros where row(i) < 0 (padding, or an id outside a shard).
template <typename Row>
void copyRows(const KernelContext& c, const Lookup& io, Row row) {
  const int64_t width = io.t.width;
  dispatchFloat(c, "W", io.w, [&](auto tag) {
    using T = decltype(tag);
    const T* wp = io.w.data<T>();
    T* o = io.out.data<T>();
    for (int64_t i = 0, n = io.ids.numel(); i < n; ++i) {
      T* dst = o + i * width;
      int64_t r = row(i);
      if (r < 0) std::fill(dst, dst + width, T(0));
      else std::copy(wp + r * width, wp + (r + 1) * width, dst);
    }
  });
}

// Its grad's (lookup_table_v2_grad, c_embedding_grad): W@GRAD as W, Out@GRAD as the lookup's Out.
struct LookupGrad {
  const Tensor &ids, &w, &g;
  Tensor& dw;
  Table t;
};
LookupGrad lookupGradOf(const KernelContext& c);

// W@GRAD from (row, position) pairs: each row the sum of its positions' Out@GRAD rows, in double,
// in position order (the pairs are grouped by row first, so the result does not depend on how the
// ids interleave); rows no pair names are zero.
void sumRowsOfPositions(const KernelContext& c, const LookupGrad& io, std::vector<std::pair<int64_t, int64_t>> rows_positions);

// Logits viewed as [outer, classes, inner] around the class axis.
struct ClassView {
  int64_t outer, classes, inner;
  std::vector<int64_t> reduced;  // Logits' shape with the class axis 1 (Label's and Loss's)
};

inline ClassView classView(const KernelContext& c, const std::vector<int64_t>& shape) {
  if (shape.empty()) kernelFail(c, "Logits must have at least one dim");
  size_t axis = size_t(normaliseAxis(c, intAttr(c, "axis", -1), shape.size(), "axis"));
  ClassView v{product(shape, 0, axis), shape[axis], product(shape, axis + 1), shape};
  v.reduced[axis] = 1;
  return v;
}

}  // namespace spopt::rt
