#pragma once
// CUDA error checks and device tensors for the nccl backend.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/tensor.h"

namespace spopt::rt {

// A CUDA, cuBLAS or NCCL call failed while running (not a property of the job): exit 70.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw DeviceError(std::string(what) + " failed: " + cudaGetErrorString(e));
}

// A tensor in device memory with the host Tensor's dtype and storage rules (runtime/tensor.h).
// The buffer is allocated stream-ordered; its deleter frees it on `free_stream`, which the
// executor orders after every stream that used it before the last reference goes.
struct DevTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  std::shared_ptr<void> buf;

  Storage storage() const { return storageOf(dtype); }
  size_t bytes() const { return size_t(numel) * storageSize(storage()); }
  bool empty() const { return !buf; }
  template <typename T> T* data() const { return static_cast<T*>(buf.get()); }
};

// Allocates on `alloc_stream` (uninitialised); frees on `free_stream`.
inline DevTensor allocDevice(DType dtype, std::vector<int64_t> shape, cudaStream_t alloc_stream, cudaStream_t free_stream) {
  DevTensor t;
  t.dtype = dtype;
  t.numel = 1;
  for (int64_t d : shape) t.numel *= d;
  t.shape = std::move(shape);
  void* p = nullptr;
  size_t n = t.bytes();
  cudaCheck(cudaMallocAsync(&p, n ? n : 1, alloc_stream), "cudaMallocAsync");
  t.buf = std::shared_ptr<void>(p, [free_stream](void* q) { cudaFreeAsync(q, free_stream); });
  return t;
}

}  // namespace spopt::rt
