#pragma once
// Device implementations of the compute ops of ../shared/design/ops.md for the nccl backend.
// Each reads attributes with the CPU kernels' readers (kernel_util.h, the same defaults), checks
// shapes, and enqueues CUDA kernels or cuBLAS calls on the op's stream. An op without a device
// implementation, or a case one declines (returns false, e.g. fill_constant with a ValueTensor),
// runs its CPU kernel on host copies (device_executor.cpp): slower, but the same semantics.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string_view>
#include <vector>

#include "runtime/kernels/kernels.h"
#include "runtime/nccl/cuda_util.h"

namespace spopt::rt {

class DeviceOpIO {
 public:
  virtual ~DeviceOpIO() = default;
  virtual const DevTensor* input(std::string_view slot, size_t i = 0) const = 0;
  virtual size_t inputCount(std::string_view slot) const = 0;
  virtual DevTensor* output(std::string_view slot, size_t i = 0) = 0;
  virtual size_t outputCount(std::string_view slot) const = 0;
};

struct DeviceOpContext {
  const KernelContext& host;  // op, rank, seed; for attribute readers and kernelFail (its io has no tensors)
  DeviceOpIO& io;
  cudaStream_t stream;
  cublasHandle_t blas;  // bound to `stream`
};

// Returns false to run the CPU kernel instead; throws KernelError on bad shapes or attributes.
using DeviceKernelFn = bool (*)(DeviceOpContext&);
DeviceKernelFn findDeviceKernel(std::string_view op_type);  // nullptr: CPU kernel on host copies
std::vector<std::string_view> deviceKernelOps();

}  // namespace spopt::rt
