#pragma once
// Helpers shared by the device op families (device_ops_*.cpp): slot access and shape checks that
// throw KernelError naming the op (through the CPU kernels' kernelFail), float dispatch, copies.
#include <cublas_v2.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "runtime/kernels/broadcast.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/nccl/device_kernels.h"
#include "runtime/nccl/device_ops.h"

namespace spopt::rt::device_ops {

using Dims = std::vector<int64_t>;

inline const DevTensor& in(DeviceOpContext& c, std::string_view slot, size_t i = 0) {
  const DevTensor* t = c.io.input(slot, i);
  if (!t) kernelFail(c.host, "missing input " + std::string(slot));
  return *t;
}
inline DevTensor& out(DeviceOpContext& c, std::string_view slot, size_t i = 0) {
  DevTensor* t = c.io.output(slot, i);
  if (!t) kernelFail(c.host, "missing output " + std::string(slot));
  return *t;
}

inline void sameShape(DeviceOpContext& c, std::string_view a_name, const DevTensor& a, std::string_view b_name, const DevTensor& b) {
  if (a.shape != b.shape)
    kernelFail(c.host, std::string(a_name) + " " + shapeStr(a.shape) + " differs from " + std::string(b_name) + " " + shapeStr(b.shape));
}
inline void sameStorage(DeviceOpContext& c, std::string_view a_name, const DevTensor& a, std::string_view b_name, const DevTensor& b) {
  if (a.storage() != b.storage())
    kernelFail(c.host, std::string(a_name) + " is " + std::string(dtypeName(a.dtype)) + " but " + std::string(b_name) + " is " +
                           std::string(dtypeName(b.dtype)));
}
inline bool isFloat(const DevTensor& t) { return t.storage() == Storage::F32 || t.storage() == Storage::F64; }
inline void requireFloatDev(DeviceOpContext& c, std::string_view name, const DevTensor& t) {
  if (!isFloat(t)) kernelFail(c.host, std::string(name) + " is " + std::string(dtypeName(t.dtype)) + ", not a floating dtype");
}
// Out like X: same storage and shape, floating.
inline void likeInput(DeviceOpContext& c, std::string_view xn, const DevTensor& x, std::string_view on, const DevTensor& o) {
  requireFloatDev(c, xn, x);
  sameStorage(c, on, o, xn, x);
  sameShape(c, on, o, xn, x);
}

template <typename F> inline void byFloat(const DevTensor& t, F&& f) {
  if (t.storage() == Storage::F64) f(double{});
  else f(float{});
}

inline void copyDev(DeviceOpContext& c, const DevTensor& from, DevTensor& to) {
  if (from.bytes() != to.bytes()) kernelFail(c.host, "copy between tensors of different sizes");
  if (from.bytes() && from.buf != to.buf)
    cudaCheck(cudaMemcpyAsync(to.buf.get(), from.buf.get(), from.bytes(), cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpyAsync");
}

inline void blasCheck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw DeviceError(std::string(what) + " failed: cuBLAS status " + std::to_string(int(s)));
}

// The device kernels index at most kMaxDims collapsed dims; past that the op runs on the CPU
// kernel (nullopt: the caller returns false).
inline std::optional<cuda::BroadcastDims> toDims(const BroadcastPlan& p) {
  cuda::BroadcastDims d;
  if (p.sizes.size() > size_t(cuda::kMaxDims)) return std::nullopt;
  d.rank = int(p.sizes.size());
  for (size_t i = 0; i < p.sizes.size(); ++i) d.sizes[i] = p.sizes[i], d.x_strides[i] = p.x_strides[i], d.y_strides[i] = p.y_strides[i];
  return d;
}

// The op type -> device implementation table, filled by one register function per family.
using DeviceOpTable = std::unordered_map<std::string_view, DeviceKernelFn>;  // by canonical op name (ops/op_def.h)
void registerMathOps(DeviceOpTable& t);      // device_ops_math.cpp
void registerPointwiseOps(DeviceOpTable& t);  // device_ops_pointwise.cpp
void registerMovementOps(DeviceOpTable& t);   // device_ops_movement.cpp

}  // namespace spopt::rt::device_ops
