#pragma once
// conv2d as GEMMs (im2col + OpenBLAS per image and group), shared by conv2d (+grad) and
// conv2d_transpose (+grad): a transposed convolution is a convolution's input gradient, and its
// input gradient that convolution (runtime/kernels/conv.cpp, conv_transpose.cpp). A 1x1
// convolution with stride 1 and no padding multiplies the image itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ops/conv_geometry.h"
#include "runtime/buffer_pool.h"
#include "runtime/kernels/blas.h"

namespace spopt::rt {

// The convolution's Input [n, cin, h, w], Filter [cout, cin / groups, kh, kw], Output [n, cout, oh, ow].
struct ConvShape {
  int64_t n, cin, h, w;      // Input
  int64_t cout, groups;      // Filter [cout, cin / groups, kh, kw]
  int64_t kh, kw, oh, ow;
  int64_t cg() const { return cin / groups; }
  int64_t mg() const { return cout / groups; }
  int64_t k() const { return cg() * kh * kw; }  // GEMM depth
  int64_t plane() const { return oh * ow; }
};

// The im2col buffer (k x plane), from the buffer pool: a ResNet conv's is megabytes, and fresh
// pages for it on every call cost more than the im2col itself.
template <typename T> std::shared_ptr<std::byte> colBuffer(const ConvShape& s, bool direct) {
  return direct ? nullptr : allocateBuffer(size_t(s.k() * s.plane()) * sizeof(T), false);
}

inline bool isPointwise(const ConvShape& s, const Window2d& w) {
  return s.kh == 1 && s.kw == 1 && w.h.stride == 1 && w.w.stride == 1 && w.h.pad_before == 0 && w.w.pad_before == 0 &&
         s.oh == s.h && s.ow == s.w;
}

// col[(ci * kh + i) * kw + j][oy * ow + ox] = x[ci][oy * sh - ph + i * dh][ox * sw - pw + j * dw], 0 in the padding.
template <typename T> void im2col(const T* x, const ConvShape& s, const Window2d& w, T* col) {
  for (int64_t ci = 0; ci < s.cg(); ++ci)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        T* row = col + ((ci * s.kh + i) * s.kw + j) * s.plane();
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          int64_t iy = oy * w.h.stride - w.h.pad_before + i * w.h.dilation;
          T* out = row + oy * s.ow;
          if (iy < 0 || iy >= s.h) {
            std::fill(out, out + s.ow, T(0));
            continue;
          }
          const T* in = x + (ci * s.h + iy) * s.w;
          for (int64_t ox = 0; ox < s.ow; ++ox) {
            int64_t ix = ox * w.w.stride - w.w.pad_before + j * w.w.dilation;
            out[ox] = ix >= 0 && ix < s.w ? in[ix] : T(0);
          }
        }
      }
}

// The adjoint of im2col: dx[...] += col[...] (dx zeroed by the caller).
template <typename T> void col2im(const T* col, const ConvShape& s, const Window2d& w, T* dx) {
  for (int64_t ci = 0; ci < s.cg(); ++ci)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        const T* row = col + ((ci * s.kh + i) * s.kw + j) * s.plane();
        for (int64_t oy = 0; oy < s.oh; ++oy) {
          int64_t iy = oy * w.h.stride - w.h.pad_before + i * w.h.dilation;
          if (iy < 0 || iy >= s.h) continue;
          T* out = dx + (ci * s.h + iy) * s.w;
          const T* in = row + oy * s.ow;
          for (int64_t ox = 0; ox < s.ow; ++ox) {
            int64_t ix = ox * w.w.stride - w.w.pad_before + j * w.w.dilation;
            if (ix >= 0 && ix < s.w) out[ix] += in[ox];
          }
        }
      }
}

// Output[n, g] = Filter[g] (mg x k) . col(Input[n, g]) (k x plane).
template <typename T> void convForward(const ConvShape& s, const Window2d& w, const T* x, const T* f, T* y) {
  const bool direct = isPointwise(s, w);
  auto col_buf = colBuffer<T>(s, direct);
  T* col = reinterpret_cast<T*>(col_buf.get());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.groups; ++g) {
      const T* xg = x + (n * s.cin + g * s.cg()) * s.h * s.w;
      const T* b = xg;
      if (!direct) {
        im2col(xg, s, w, col);
        b = col;
      }
      T* yg = y + (n * s.cout + g * s.mg()) * s.plane();
      blasGemm(false, false, s.mg(), s.plane(), s.k(), f + g * s.mg() * s.k(), s.k(), b, s.plane(), T(0), yg, s.plane());
    }
}

// Filter@GRAD[g] = sum over n of Output@GRAD[n, g] . col(Input[n, g])^T.
template <typename T> void convFilterGrad(const ConvShape& s, const Window2d& w, const T* x, const T* dy, T* df) {
  const bool direct = isPointwise(s, w);
  auto col_buf = colBuffer<T>(s, direct);
  T* col = reinterpret_cast<T*>(col_buf.get());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.groups; ++g) {
      const T* b = x + (n * s.cin + g * s.cg()) * s.h * s.w;
      if (!direct) {
        im2col(b, s, w, col);
        b = col;
      }
      const T* dyg = dy + (n * s.cout + g * s.mg()) * s.plane();
      blasGemm(false, true, s.mg(), s.k(), s.plane(), dyg, s.plane(), b, s.plane(), T(n ? 1 : 0), df + g * s.mg() * s.k(), s.k());
    }
}

// Input@GRAD[n, g] = col2im(Filter[g]^T . Output@GRAD[n, g]), over a zeroed dx.
template <typename T> void convInputGrad(const ConvShape& s, const Window2d& w, const T* f, const T* dy, T* dx) {
  const bool direct = isPointwise(s, w);
  auto col_buf = colBuffer<T>(s, direct);
  T* col = reinterpret_cast<T*>(col_buf.get());
  std::fill(dx, dx + s.n * s.cin * s.h * s.w, T(0));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t g = 0; g < s.groups; ++g) {
      const T* dyg = dy + (n * s.cout + g * s.mg()) * s.plane();
      T* dxg = dx + (n * s.cin + g * s.cg()) * s.h * s.w;
      T* dst = direct ? dxg : col;
      blasGemm(true, false, s.k(), s.plane(), s.mg(), f + g * s.mg() * s.k(), s.k(), dyg, s.plane(), T(0), dst, s.plane());
      if (!direct) col2im(col, s, w, dxg);
    }
}

}  // namespace spopt::rt
