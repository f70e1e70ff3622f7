#pragma once
// Launchers of the nccl backend's CUDA kernels (device_kernels.cu). Plain C++ signatures over
// device pointers, so the host code that checks shapes and attributes compiles with g++.
// Every launcher enqueues on `s` and returns at once; T is float or double unless noted.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace spopt::rt::cuda {

constexpr int kMaxDims = 8;

// Paddle broadcasting collapsed into at most kMaxDims dims (runtime/kernels/broadcast.h):
// operand strides are 0 along the dims it is broadcast over.
struct BroadcastDims {
  int rank = 0;
  int64_t sizes[kMaxDims] = {}, x_strides[kMaxDims] = {}, y_strides[kMaxDims] = {};
};

enum class Binary : int { Add, Mul };

// T in {float, double, int64_t, uint8_t}.
template <typename T> void fill(T* out, int64_t n, T value, cudaStream_t s);

template <typename T> void binary(Binary op, const T* x, const T* y, T* out, const BroadcastDims& d, int64_t n, cudaStream_t s);
// d[j] = sum over the out elements that operand `self` (x when self_is_x) maps to j of
// g * (Mul ? other : 1), accumulated in double (elementwise_*_grad).
template <typename T>
void binaryGrad(Binary op, bool self_is_x, const T* g, const T* other, T* d, int64_t d_numel, const BroadcastDims& dims, cudaStream_t s);
// Reductions (reduce_sum / reduce_mean / mean) as broadcasts read backwards (reduce.cpp): with
// x the full shape and y the keep_dim shape, reduceToY sums x into y in double and multiplies by
// `scale`; broadcastFromY writes out[i] = y[offset of i] * scale (the gradient).
template <typename T> void reduceToY(const T* x, T* y, int64_t y_numel, const BroadcastDims& dims, double scale, cudaStream_t s);
template <typename T> void broadcastFromY(const T* y, T* out, int64_t n, const BroadcastDims& dims, double scale, cudaStream_t s);

template <typename T> void relu(const T* x, T* out, int64_t n, cudaStream_t s);
template <typename T> void reluGrad(const T* out, const T* g, T* dx, int64_t n, cudaStream_t s);
template <typename T> void gelu(const T* x, T* out, int64_t n, bool approximate, cudaStream_t s);
template <typename T> void geluGrad(const T* x, const T* g, T* dx, int64_t n, bool approximate, cudaStream_t s);
// out = scale * x + bias (bias already multiplied by scale when it applies before scaling).
template <typename T> void affine(const T* x, T* out, int64_t n, T scale, T bias, cudaStream_t s);
void affineInt(const int64_t* x, int64_t* out, int64_t n, double scale, double bias, bool bias_after, cudaStream_t s);
// out = a - rate * b (sgd).
template <typename T> void axpyFrom(const T* a, const T* b, T* out, int64_t n, T rate, cudaStream_t s);
// out = xs[0] + xs[1] + ... in input order, accumulated in double (the sum op); n_inputs <= kMaxSumInputs.
constexpr int kMaxSumInputs = 32;
template <typename T> void sumInputs(const T* const* xs, int n_inputs, T* out, int64_t n, cudaStream_t s);

// Dropout in training with the CPU kernel's hash (runtime/kernels/dropout_hash.h); mask may be null.
template <typename T>
void dropout(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t stream, uint64_t threshold, T kept_scale, cudaStream_t s);
template <typename T> void dropoutGrad(const uint8_t* mask, const T* g, T* dx, int64_t n, T kept_scale, cudaStream_t s);

// softmax along an axis viewed as [outer, len, inner]: one thread per (outer, inner) row,
// the denominator in double, as the CPU kernel.
template <typename T> void softmax(const T* x, T* out, int64_t outer, int64_t len, int64_t inner, cudaStream_t s);
template <typename T> void softmaxGrad(const T* out, const T* g, T* dx, int64_t outer, int64_t len, int64_t inner, cudaStream_t s);

// layer_norm over [rows, cols]: statistics in double per row (two-pass variance); scale and bias
// may be null (1 and 0); mean / var may be null. One thread per row, as the CPU kernel's loop.
template <typename T>
void layerNorm(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows, int64_t cols, double eps, cudaStream_t s);
// layer_norm_grad: dx per row; dscale / dbias summed over rows per column (each may be null).
template <typename T>
void layerNormGrad(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx, T* dscale, T* dbias, int64_t rows,
                   int64_t cols, double eps, cudaStream_t s);

// out = permutation of x (transpose2): out dim i is in dim perm[i]; element bytes 1, 4 or 8.
void permute(const void* x, void* out, int rank, const int64_t* in_shape, const int* perm, int64_t n, int elem_bytes, cudaStream_t s);

}  // namespace spopt::rt::cuda
