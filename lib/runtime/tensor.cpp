#include "runtime/tensor.h"

#include "runtime/half.h"

#include "ops/shape_math.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "runtime/buffer_pool.h"
#include "support/checked_size.h"

namespace spopt::rt {

Storage storageOf(DType t) {
  // The mapping is shared with the verifier's dtype rules (ops/shape_math.h).
  switch (dtypeStorage(t)) {
    case DTypeStorage::F64: return Storage::F64;
    case DTypeStorage::I64: return Storage::I64;
    case DTypeStorage::U8: return Storage::U8;
    case DTypeStorage::F32: break;
  }
  return Storage::F32;
}

size_t storageSize(Storage s) {
  switch (s) {
    case Storage::F32: return 4;
    case Storage::F64:
    case Storage::I64: return 8;
    case Storage::U8: return 1;
  }
  return 1;
}

Tensor Tensor::shapeOnly(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  bool unknown = false;
  for (int64_t d : shape) unknown |= d < 0;
  auto n = unknown ? std::optional<int64_t>(0) : checkedNumel(shape);
  if (!n) throw std::length_error("tensor shape holds more elements than int64 counts");
  t.numel_ = *n;
  t.shape_ = std::move(shape);
  return t;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) throw std::invalid_argument("tensor shape has an unknown (-1) dim");
  // Checked (support/checked_size.h): a wrapped size would allocate a small buffer that the
  // kernels then overrun. Replay refuses such jobs before this (memory budget, verifier).
  auto total = checkedBytes(shape_, storageSize(storageOf(dtype_)));
  if (!total || uint64_t(*total) > uint64_t(SIZE_MAX) - 64) throw std::bad_alloc();
  numel_ = *checkedNumel(shape_);
  buf_ = allocateBuffer(size_t(*total));
}

Tensor Tensor::view(std::vector<int64_t> shape) const {
  Tensor t = *this;
  auto n = checkedNumel(shape);
  if (!n || *n != numel_) throw std::invalid_argument("view: element count differs");
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::part(int64_t i) const {
  if (shape_.empty() || i < 0 || i >= shape_[0]) throw std::invalid_argument("part: index outside the stack");
  Tensor t = *this;
  t.shape_.erase(t.shape_.begin());
  t.numel_ = shape_[0] ? numel_ / shape_[0] : 0;
  t.buf_ = std::shared_ptr<std::byte>(buf_, buf_.get() + size_t(i * t.numel_) * storageSize(storage()));
  return t;
}

Tensor Tensor::window(int64_t offset, std::vector<int64_t> shape) const {
  auto n = checkedNumel(shape);
  if (!n || offset < 0 || offset > numel_ || *n > numel_ - offset) throw std::invalid_argument("window: outside the tensor");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.numel_ = *n;
  t.buf_ = std::shared_ptr<std::byte>(buf_, buf_.get() + size_t(offset) * storageSize(storage()));
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (numel_) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

double Tensor::valueAt(int64_t i) const {
  switch (storage()) {
    case Storage::F32: return data<float>()[i];
    case Storage::F64: return data<double>()[i];
    case Storage::I64: return double(data<int64_t>()[i]);
    case Storage::U8: return data<uint8_t>()[i];
  }
  return 0;
}

void Tensor::checkStorage(Storage s) const {
  if (s != storage()) throw std::logic_error("tensor accessed with the wrong element type");
}

void Tensor::roundToDType() {
  if (!buf_ || !isHalfDType(dtype_)) return;
  rt::roundToDType(dtype_, data<float>(), numel_);
}

}  // namespace spopt::rt
