// The nccl backend's CUDA kernels: grid-stride loops computing what the CPU kernels of
// runtime/kernels/ compute (same formulas, sums in double where the CPU sums in double).
#include "runtime/kernels/dropout_hash.h"
#include "runtime/nccl/device_kernels.h"

namespace spopt::rt::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

#define SPOPT_GRID_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <typename T> __global__ void fillKernel(T* out, int64_t n, T v) {
  SPOPT_GRID_LOOP(i, n) out[i] = v;
}

// Offsets of output element o into x and y.
__device__ inline void offsets(const BroadcastDims& d, int64_t o, int64_t& ox, int64_t& oy) {
  ox = 0, oy = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t c = o % d.sizes[k];
    o /= d.sizes[k];
    ox += c * d.x_strides[k];
    oy += c * d.y_strides[k];
  }
}

template <typename T> __global__ void binaryKernel(Binary op, const T* x, const T* y, T* out, BroadcastDims d, int64_t n) {
  SPOPT_GRID_LOOP(i, n) {
    int64_t ox, oy;
    offsets(d, i, ox, oy);
    out[i] = op == Binary::Add ? x[ox] + y[oy] : x[ox] * y[oy];
  }
}

// One thread per element j of the gradient: the dims where `self` advances give j's coordinates,
// the others (self's broadcast dims) are summed over in row-major order.
template <typename T>
__global__ void binaryGradKernel(Binary op, bool self_is_x, const T* g, const T* other, T* d, int64_t d_numel, BroadcastDims dims,
                                 double scale) {
  const int64_t* self_strides = self_is_x ? dims.x_strides : dims.y_strides;
  const int64_t* other_strides = self_is_x ? dims.y_strides : dims.x_strides;
  int64_t reduced = 1;
  for (int k = 0; k < dims.rank; ++k)
    if (self_strides[k] == 0) reduced *= dims.sizes[k];
  SPOPT_GRID_LOOP(j, d_numel) {
    // Coordinates along self's dims from j (self's strides are row-major over those dims).
    int64_t coord[kMaxDims];
    int64_t rest = j;
    for (int k = 0; k < dims.rank; ++k) {
      coord[k] = 0;
      if (self_strides[k]) {
        coord[k] = rest / self_strides[k];
        rest -= coord[k] * self_strides[k];
      }
    }
    double acc = 0;
    for (int64_t r = 0; r < reduced; ++r) {
      int64_t left = r;
      for (int k = dims.rank - 1; k >= 0; --k)
        if (!self_strides[k]) {
          coord[k] = left % dims.sizes[k];
          left /= dims.sizes[k];
        }
      int64_t og = 0, oo = 0, stride = 1;
      for (int k = dims.rank - 1; k >= 0; --k) {
        og += coord[k] * stride;
        stride *= dims.sizes[k];
        oo += coord[k] * other_strides[k];
      }
      acc += op == Binary::Add ? double(g[og]) : double(g[og]) * double(other[oo]);
    }
    d[j] = T(acc * scale);
  }
}

template <typename T> __global__ void broadcastFromYKernel(const T* y, T* out, BroadcastDims d, int64_t n, double scale) {
  SPOPT_GRID_LOOP(i, n) {
    int64_t ox, oy;
    offsets(d, i, ox, oy);
    out[i] = T(double(y[oy]) * scale);
  }
}

template <typename T> __device__ inline T normalCdf(T v) { return T(0.5) * erfc(-v * T(0.70710678118654752440)); }

template <typename T> __global__ void reluKernel(const T* x, T* out, int64_t n) {
  SPOPT_GRID_LOOP(i, n) out[i] = x[i] > T(0) ? x[i] : T(0);
}
template <typename T> __global__ void reluGradKernel(const T* out, const T* g, T* dx, int64_t n) {
  SPOPT_GRID_LOOP(i, n) dx[i] = out[i] > T(0) ? g[i] : T(0);
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kGeluCubic = 0.044715;

template <typename T> __global__ void geluKernel(const T* x, T* out, int64_t n, bool approximate) {
  SPOPT_GRID_LOOP(i, n) {
    T v = x[i];
    if (approximate) {
      T u2 = T(2 * kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v);
      out[i] = v / (T(1) + exp(-u2));
    } else {
      out[i] = v * normalCdf(v);
    }
  }
}
template <typename T> __global__ void geluGradKernel(const T* x, const T* g, T* dx, int64_t n, bool approximate) {
  SPOPT_GRID_LOOP(i, n) {
    T v = x[i], slope;
    if (approximate) {
      T u2 = T(2 * kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v);
      T sg = T(1) / (T(1) + exp(-u2));
      T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v * v);
      slope = sg + T(2) * v * sg * (T(1) - sg) * du;
    } else {
      slope = normalCdf(v) + v * T(kInvSqrt2Pi) * exp(T(-0.5) * v * v);
    }
    dx[i] = g[i] * slope;
  }
}

template <typename T> __global__ void affineKernel(const T* x, T* out, int64_t n, T scale, T bias) {
  SPOPT_GRID_LOOP(i, n) out[i] = scale * x[i] + bias;
}
__global__ void affineIntKernel(const int64_t* x, int64_t* out, int64_t n, double scale, double bias, bool after) {
  SPOPT_GRID_LOOP(i, n) out[i] = int64_t(after ? scale * double(x[i]) + bias : scale * (double(x[i]) + bias));
}
template <typename T> __global__ void axpyFromKernel(const T* a, const T* b, T* out, int64_t n, T rate) {
  SPOPT_GRID_LOOP(i, n) out[i] = a[i] - rate * b[i];
}
template <typename T> struct SumInputs {
  const T* x[kMaxSumInputs];
  int count;
};
template <typename T> __global__ void sumInputsKernel(SumInputs<T> in, T* out, int64_t n) {
  SPOPT_GRID_LOOP(i, n) {
    double acc = double(in.x[0][i]);
    for (int k = 1; k < in.count; ++k) acc += double(in.x[k][i]);
    out[i] = T(acc);
  }
}

template <typename T>
__global__ void dropoutKernel(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t stream, uint64_t threshold, T kept) {
  SPOPT_GRID_LOOP(i, n) {
    bool keep = dropout_hash::keep(stream, i, threshold);
    out[i] = keep ? kept * x[i] : T(0);
    if (mask) mask[i] = keep ? 1 : 0;
  }
}
template <typename T> __global__ void dropoutGradKernel(const uint8_t* mask, const T* g, T* dx, int64_t n, T kept) {
  SPOPT_GRID_LOOP(i, n) dx[i] = mask[i] ? kept * g[i] : T(0);
}

template <typename T> __global__ void softmaxKernel(const T* x, T* out, int64_t outer, int64_t len, int64_t inner) {
  SPOPT_GRID_LOOP(row, outer * inner) {
    int64_t base = (row / inner) * len * inner + row % inner;
    T m = x[base];
    for (int64_t k = 1; k < len; ++k) m = x[base + k * inner] > m ? x[base + k * inner] : m;
    double sum = 0;
    for (int64_t k = 0; k < len; ++k) {
      T e = exp(x[base + k * inner] - m);
      out[base + k * inner] = e;
      sum += double(e);
    }
    T inv = T(1.0 / sum);
    for (int64_t k = 0; k < len; ++k) out[base + k * inner] *= inv;
  }
}
template <typename T> __global__ void softmaxGradKernel(const T* out, const T* g, T* dx, int64_t outer, int64_t len, int64_t inner) {
  SPOPT_GRID_LOOP(row, outer * inner) {
    int64_t base = (row / inner) * len * inner + row % inner;
    double dot = 0;
    for (int64_t k = 0; k < len; ++k) dot += double(out[base + k * inner]) * double(g[base + k * inner]);
    for (int64_t k = 0; k < len; ++k)
      dx[base + k * inner] = T(double(out[base + k * inner]) * (double(g[base + k * inner]) - dot));
  }
}

template <typename T>
__global__ void layerNormKernel(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows, int64_t cols, double eps) {
  SPOPT_GRID_LOOP(r, rows) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    double mu = 0;
    for (int64_t j = 0; j < cols; ++j) mu += double(xr[j]);
    mu /= double(cols);
    double variance = 0;
    for (int64_t j = 0; j < cols; ++j) {
      double d = double(xr[j]) - mu;
      variance += d * d;
    }
    variance /= double(cols);
    double rstd = 1.0 / sqrt(variance + eps);
    T tm = T(mu), tr = T(rstd);
    for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - tm) * tr * (scale ? scale[j] : T(1)) + (bias ? bias[j] : T(0));
    if (mean) mean[r] = T(mu);
    if (var) var[r] = T(variance);
  }
}

template <typename T>
__global__ void layerNormGradRows(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx, int64_t rows, int64_t cols,
                                  double eps) {
  SPOPT_GRID_LOOP(r, rows) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    double mu = double(mean[r]), rstd = 1.0 / sqrt(double(var[r]) + eps);
    double sum_d = 0, sum_dx = 0;
    for (int64_t j = 0; j < cols; ++j) {
      double xh = (double(xr[j]) - mu) * rstd, dxh = double(dyr[j]) * (scale ? double(scale[j]) : 1.0);
      sum_d += dxh;
      sum_dx += dxh * xh;
    }
    double md = sum_d / double(cols), mdx = sum_dx / double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      double xh = (double(xr[j]) - mu) * rstd, dxh = double(dyr[j]) * (scale ? double(scale[j]) : 1.0);
      dx[r * cols + j] = T(rstd * (dxh - md - xh * mdx));
    }
  }
}

template <typename T>
__global__ void layerNormGradCols(const T* x, const T* mean, const T* var, const T* dy, T* dscale, T* dbias, int64_t rows, int64_t cols,
                                  double eps) {
  SPOPT_GRID_LOOP(j, cols) {
    double acc_scale = 0, acc_bias = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double rstd = 1.0 / sqrt(double(var[r]) + eps);
      double g = double(dy[r * cols + j]);
      acc_scale += g * ((double(x[r * cols + j]) - double(mean[r])) * rstd);
      acc_bias += g;
    }
    if (dscale) dscale[j] = T(acc_scale);
    if (dbias) dbias[j] = T(acc_bias);
  }
}

struct PermuteDims {
  int rank;
  int64_t out_sizes[kMaxDims], in_strides_of_out[kMaxDims];
};
template <typename E> __global__ void permuteKernel(const E* x, E* out, PermuteDims p, int64_t n) {
  SPOPT_GRID_LOOP(o, n) {
    int64_t rest = o, off = 0;
    for (int k = p.rank - 1; k >= 0; --k) {
      off += (rest % p.out_sizes[k]) * p.in_strides_of_out[k];
      rest /= p.out_sizes[k];
    }
    out[o] = x[off];
  }
}

}  // namespace

#define SPOPT_LAUNCH(kernel, n, s) kernel<<<blocksFor(n), kThreads, 0, s>>>

template <typename T> void fill(T* out, int64_t n, T value, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(fillKernel<T>, n, s)(out, n, value);
}
template <typename T> void binary(Binary op, const T* x, const T* y, T* out, const BroadcastDims& d, int64_t n, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(binaryKernel<T>, n, s)(op, x, y, out, d, n);
}
template <typename T>
void binaryGrad(Binary op, bool self_is_x, const T* g, const T* other, T* d, int64_t d_numel, const BroadcastDims& dims, cudaStream_t s) {
  if (d_numel) SPOPT_LAUNCH(binaryGradKernel<T>, d_numel, s)(op, self_is_x, g, other, d, d_numel, dims, 1.0);
}
template <typename T> void reduceToY(const T* x, T* y, int64_t y_numel, const BroadcastDims& dims, double scale, cudaStream_t s) {
  if (y_numel) SPOPT_LAUNCH(binaryGradKernel<T>, y_numel, s)(Binary::Add, false, x, x, y, y_numel, dims, scale);
}
template <typename T> void broadcastFromY(const T* y, T* out, int64_t n, const BroadcastDims& dims, double scale, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(broadcastFromYKernel<T>, n, s)(y, out, dims, n, scale);
}
template <typename T> void relu(const T* x, T* out, int64_t n, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(reluKernel<T>, n, s)(x, out, n);
}
template <typename T> void reluGrad(const T* out, const T* g, T* dx, int64_t n, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(reluGradKernel<T>, n, s)(out, g, dx, n);
}
template <typename T> void gelu(const T* x, T* out, int64_t n, bool approximate, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(geluKernel<T>, n, s)(x, out, n, approximate);
}
template <typename T> void geluGrad(const T* x, const T* g, T* dx, int64_t n, bool approximate, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(geluGradKernel<T>, n, s)(x, g, dx, n, approximate);
}
template <typename T> void affine(const T* x, T* out, int64_t n, T scale, T bias, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(affineKernel<T>, n, s)(x, out, n, scale, bias);
}
void affineInt(const int64_t* x, int64_t* out, int64_t n, double scale, double bias, bool after, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(affineIntKernel, n, s)(x, out, n, scale, bias, after);
}
template <typename T> void axpyFrom(const T* a, const T* b, T* out, int64_t n, T rate, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(axpyFromKernel<T>, n, s)(a, b, out, n, rate);
}
template <typename T> void sumInputs(const T* const* xs, int n_inputs, T* out, int64_t n, cudaStream_t s) {
  SumInputs<T> in{};
  in.count = n_inputs;
  for (int k = 0; k < n_inputs; ++k) in.x[k] = xs[k];
  if (n) SPOPT_LAUNCH(sumInputsKernel<T>, n, s)(in, out, n);
}
template <typename T>
void dropout(const T* x, T* out, uint8_t* mask, int64_t n, uint64_t stream, uint64_t threshold, T kept, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(dropoutKernel<T>, n, s)(x, out, mask, n, stream, threshold, kept);
}
template <typename T> void dropoutGrad(const uint8_t* mask, const T* g, T* dx, int64_t n, T kept, cudaStream_t s) {
  if (n) SPOPT_LAUNCH(dropoutGradKernel<T>, n, s)(mask, g, dx, n, kept);
}
template <typename T> void softmax(const T* x, T* out, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  if (outer * inner > 0 && len > 0) SPOPT_LAUNCH(softmaxKernel<T>, outer * inner, s)(x, out, outer, len, inner);
}
template <typename T> void softmaxGrad(const T* out, const T* g, T* dx, int64_t outer, int64_t len, int64_t inner, cudaStream_t s) {
  if (outer * inner > 0 && len > 0) SPOPT_LAUNCH(softmaxGradKernel<T>, outer * inner, s)(out, g, dx, outer, len, inner);
}

template <typename T>
void layerNorm(const T* x, const T* scale, const T* bias, T* y, T* mean, T* var, int64_t rows, int64_t cols, double eps, cudaStream_t s) {
  if (rows > 0 && cols > 0) SPOPT_LAUNCH(layerNormKernel<T>, rows, s)(x, scale, bias, y, mean, var, rows, cols, eps);
}
template <typename T>
void layerNormGrad(const T* x, const T* scale, const T* mean, const T* var, const T* dy, T* dx, T* dscale, T* dbias, int64_t rows,
                   int64_t cols, double eps, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  if (dx) SPOPT_LAUNCH(layerNormGradRows<T>, rows, s)(x, scale, mean, var, dy, dx, rows, cols, eps);
  if (dscale || dbias) SPOPT_LAUNCH(layerNormGradCols<T>, cols, s)(x, mean, var, dy, dscale, dbias, rows, cols, eps);
}

void permute(const void* x, void* out, int rank, const int64_t* in_shape, const int* perm, int64_t n, int elem_bytes, cudaStream_t s) {
  if (!n) return;
  PermuteDims p{rank, {}, {}};
  int64_t in_strides[kMaxDims];
  int64_t st = 1;
  for (int k = rank - 1; k >= 0; --k) in_strides[k] = st, st *= in_shape[k];
  for (int k = 0; k < rank; ++k) p.out_sizes[k] = in_shape[perm[k]], p.in_strides_of_out[k] = in_strides[perm[k]];
  switch (elem_bytes) {
    case 1: SPOPT_LAUNCH(permuteKernel<uint8_t>, n, s)(static_cast<const uint8_t*>(x), static_cast<uint8_t*>(out), p, n); break;
    case 4: SPOPT_LAUNCH(permuteKernel<uint32_t>, n, s)(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(out), p, n); break;
    default: SPOPT_LAUNCH(permuteKernel<uint64_t>, n, s)(static_cast<const uint64_t*>(x), static_cast<uint64_t*>(out), p, n); break;
  }
}

#define SPOPT_FLOAT_INSTANCES(T)                                                                                     \
  template void binary<T>(Binary, const T*, const T*, T*, const BroadcastDims&, int64_t, cudaStream_t);             \
  template void binaryGrad<T>(Binary, bool, const T*, const T*, T*, int64_t, const BroadcastDims&, cudaStream_t);   \
  template void reduceToY<T>(const T*, T*, int64_t, const BroadcastDims&, double, cudaStream_t);                    \
  template void broadcastFromY<T>(const T*, T*, int64_t, const BroadcastDims&, double, cudaStream_t);               \
  template void relu<T>(const T*, T*, int64_t, cudaStream_t);                                                       \
  template void reluGrad<T>(const T*, const T*, T*, int64_t, cudaStream_t);                                         \
  template void gelu<T>(const T*, T*, int64_t, bool, cudaStream_t);                                                 \
  template void geluGrad<T>(const T*, const T*, T*, int64_t, bool, cudaStream_t);                                   \
  template void affine<T>(const T*, T*, int64_t, T, T, cudaStream_t);                                               \
  template void axpyFrom<T>(const T*, const T*, T*, int64_t, T, cudaStream_t);                                      \
  template void sumInputs<T>(const T* const*, int, T*, int64_t, cudaStream_t);                                      \
  template void dropout<T>(const T*, T*, uint8_t*, int64_t, uint64_t, uint64_t, T, cudaStream_t);                   \
  template void dropoutGrad<T>(const uint8_t*, const T*, T*, int64_t, T, cudaStream_t);                             \
  template void softmax<T>(const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);                                  \
  template void softmaxGrad<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, cudaStream_t);                    \
  template void layerNorm<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double, cudaStream_t);     \
  template void layerNormGrad<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double, cudaStream_t);
SPOPT_FLOAT_INSTANCES(float)
SPOPT_FLOAT_INSTANCES(double)
template void fill<float>(float*, int64_t, float, cudaStream_t);
template void fill<double>(double*, int64_t, double, cudaStream_t);
template void fill<int64_t>(int64_t*, int64_t, int64_t, cudaStream_t);
template void fill<uint8_t>(uint8_t*, int64_t, uint8_t, cudaStream_t);

}  // namespace spopt::rt::cuda
