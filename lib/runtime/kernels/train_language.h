#pragma once
// What the embedding and cross-entropy kernels share with their vocab-parallel forms
// (train_language.cpp, vocab_parallel.cpp): integer ids, the table's geometry, the class axis.
#include <cstdint>
#include <string>
#include <string_view>
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
