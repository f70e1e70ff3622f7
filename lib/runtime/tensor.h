#pragma once
// A host tensor for replay. Floating dtypes compute in float32 or float64; float16 and bfloat16
// are stored as float32 holding only values the format represents (roundToDType, runtime/half.h;
// the executor applies it to everything a half var stores). int32/int64 are stored as int64,
// bool/uint8 as uint8.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/ir.h"

namespace spopt::rt {

enum class Storage : uint8_t { F32, F64, I64, U8 };
Storage storageOf(DType t);
size_t storageSize(Storage s);

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);  // zero-filled, 64-byte aligned
  // Shape and dtype without a buffer (empty(), data() null): what a kernel gets for an input slot
  // whose buffer it does not read (the catalogue's no-need-buffer operands, ops/op_def.h) once that buffer is released.
  static Tensor shapeOnly(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  Storage storage() const { return storageOf(dtype_); }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return size_t(numel_) * storageSize(storage()); }
  bool empty() const { return !buf_; }

  // Typed access; T must match storage() (float, double, int64_t, uint8_t), else std::logic_error.
  template <typename T> T* data();
  template <typename T> const T* data() const;
  // Element i as a double, whatever the storage (for reports, comparisons and slicing).
  double valueAt(int64_t i) const;
  void* raw() { return buf_.get(); }
  const void* raw() const { return buf_.get(); }

  // A tensor sharing this one's bytes under another shape of equal numel (reshape without copy).
  Tensor view(std::vector<int64_t> shape) const;
  // Whether another tensor shares these bytes (a view): who writes in place must copy first.
  bool sharesBuffer() const { return buf_.use_count() > 1; }
  // Part i of a stacked tensor [k, d...]: a [d...] tensor sharing its bytes (a PIR vector's element).
  Tensor part(int64_t i) const;
  // `shape`'s elements from element `offset` on, sharing this one's bytes (a part of a vector of
  // unequal parts, ops/vector_parts.h). std::invalid_argument when they run past the end.
  Tensor window(int64_t offset, std::vector<int64_t> shape) const;
  Tensor clone() const;
  // Rounds every stored value to the dtype's format when it is float16 or bfloat16 (runtime/half.h);
  // other dtypes and bufferless tensors are left alone.
  void roundToDType();

 private:
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte> buf_;
  void checkStorage(Storage s) const;
};

template <typename T> constexpr Storage storageFor();
template <> constexpr Storage storageFor<float>() { return Storage::F32; }
template <> constexpr Storage storageFor<double>() { return Storage::F64; }
template <> constexpr Storage storageFor<int64_t>() { return Storage::I64; }
template <> constexpr Storage storageFor<uint8_t>() { return Storage::U8; }

template <typename T> T* Tensor::data() {
  checkStorage(storageFor<T>());
  return reinterpret_cast<T*>(buf_.get());
}
template <typename T> const T* Tensor::data() const {
  checkStorage(storageFor<T>());
  return reinterpret_cast<const T*>(buf_.get());
}

}  // namespace spopt::rt
