#pragma once
// The shape logic of matmul_v2 shared by the CPU kernel (matmul.cpp, OpenBLAS) and the nccl
// backend (cuBLAS): every product is one "broadcast GEMM" C[b] (+)= op(A[b]) * op(B[b]) over
// numpy-broadcast batch dims, with C's batch possibly smaller than the broadcast one (a gradient
// summed over broadcast dims). The common transformer shapes fold into a single GEMM: a 2-D weight
// broadcast over activations folds the batch into M, and its gradient folds the batch into K.
// The GEMM and the zero fill are callables, so the same plan drives host and device pointers.
#include <algorithm>
#include <optional>
#include <vector>

#include "ops/shape_math.h"
#include "runtime/kernels/kernel_util.h"

namespace spopt::rt::matmul_plan {

using Dims = std::vector<int64_t>;

inline Dims batchOf(const Dims& s) { return Dims(s.begin(), s.end() - 2); }

// numpy broadcast of two batch shapes, or nullopt when they do not broadcast.
// Shared with the verifier's matmul_v2 rule (ops/shape_math.h).
inline std::optional<Dims> broadcastBatch(const Dims& a, const Dims& b) { return broadcastBatchDims(a, b); }

// Element strides of each batch index of `full` into a tensor with batch `own` (right-aligned;
// 0 where `own` is broadcast), given the matrix size of one batch entry.
inline Dims batchStrides(const Dims& own, const Dims& full, int64_t matrix) {
  Dims strides(full.size(), 0);
  int64_t s = matrix;
  for (size_t i = own.size(); i-- > 0;) {
    size_t fi = full.size() - own.size() + i;
    strides[fi] = own[i] == 1 ? 0 : s;
    s *= own[i];
  }
  return strides;
}

// C (+)= op(A) * op(B) batched over broadcast dims; shapes are logical (>= 2-D) and validated.
// gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc) is a row-major GEMM with alpha 1;
// zero(c, count) clears count elements of C.
template <typename T, typename Gemm, typename Zero>
void broadcastGemm(const T* a, const Dims& as, bool ta, const T* b, const Dims& bs, bool tb, T* c,
                   const Dims& cs, Gemm&& gemm, Zero&& zero) {
  int64_t m = ta ? as.back() : as[as.size() - 2];
  int64_t k = ta ? as[as.size() - 2] : as.back();
  int64_t n = tb ? bs[bs.size() - 2] : bs.back();
  int64_t lda = as.back(), ldb = bs.back();
  Dims ab = batchOf(as), bb = batchOf(bs), cb = batchOf(cs);
  Dims full = *broadcastBatch(ab, bb);
  int64_t na = product(ab), nb = product(bb), nc = product(cb), nfull = product(full);
  int64_t c_size = m * n * nc;
  if (c_size == 0) return;
  if (k == 0) {
    zero(c, c_size);
    return;
  }
  // One GEMM: an unbatched B applied to every row of a batched, untransposed A.
  if (nb == 1 && !ta && na == nfull && nc == nfull) {
    gemm(false, tb, m * na, n, k, a, lda, b, ldb, T(0), c, n);
    return;
  }
  // One GEMM: an unbatched C summing A^T B over the batch, whose rows are the reduction dim.
  if (nc == 1 && ta && !tb && na == nfull && nb == nfull) {
    gemm(true, false, m, n, k * na, a, lda, b, ldb, T(0), c, n);
    return;
  }
  bool accumulate = nc != nfull;
  if (accumulate) zero(c, c_size);
  Dims sa = batchStrides(ab, full, as[as.size() - 2] * as.back());
  Dims sb = batchStrides(bb, full, bs[bs.size() - 2] * bs.back());
  Dims sc = batchStrides(cb, full, m * n);
  Dims idx(full.size(), 0);
  for (int64_t it = 0; it < nfull; ++it) {
    int64_t oa = 0, ob = 0, oc = 0;
    for (size_t d = 0; d < full.size(); ++d) {
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
      oc += idx[d] * sc[d];
    }
    gemm(ta, tb, m, n, k, a + oa, lda, b + ob, ldb, accumulate ? T(1) : T(0), c + oc, n);
    for (size_t d = full.size(); d-- > 0;) {
      if (++idx[d] < full[d]) break;
      idx[d] = 0;
    }
  }
}

// The operands of a matmul_v2 in logical (>= 2-D) form, with the output shape it implies.
struct MatmulShapes {
  Dims x, y;        // logical: a 1-D X is [1,K], a 1-D Y is [K,1]
  bool tx, ty;      // ignored (false) for 1-D operands, as Paddle does
  Dims out;         // declared shape of Out
  Dims out_logical; // batch + [M, N]
};

// The transpose flags are attributes `tx_attr` / `ty_attr` (Paddle 1.x's matmul: transpose_X / _Y).
inline MatmulShapes matmulShapes(const KernelContext& c, const Dims& x_shape, const Dims& y_shape,
                                 std::string_view tx_attr = "trans_x", std::string_view ty_attr = "trans_y") {
  MatmulShapes s;
  s.x = x_shape;
  s.y = y_shape;
  if (s.x.empty() || s.y.empty())
    kernelFail(c, "X " + shapeStr(s.x) + " and Y " + shapeStr(s.y) + " must have at least one dim");
  bool x1 = s.x.size() == 1, y1 = s.y.size() == 1;
  s.tx = !x1 && boolAttr(c, tx_attr, false);
  s.ty = !y1 && boolAttr(c, ty_attr, false);
  if (x1) s.x = {1, s.x[0]};
  if (y1) s.y = {s.y[0], 1};
  int64_t m = s.tx ? s.x.back() : s.x[s.x.size() - 2];
  int64_t kx = s.tx ? s.x[s.x.size() - 2] : s.x.back();
  int64_t ky = s.ty ? s.y.back() : s.y[s.y.size() - 2];
  int64_t n = s.ty ? s.y[s.y.size() - 2] : s.y.back();
  if (kx != ky)
    kernelFail(c, "X " + shapeStr(x_shape) + " and Y " + shapeStr(y_shape) + " have different inner dims" +
                      (s.tx || s.ty ? " (trans_x=" + std::to_string(s.tx) + ", trans_y=" + std::to_string(s.ty) + ")"
                                    : ""));
  auto full = broadcastBatch(batchOf(s.x), batchOf(s.y));
  if (!full)
    kernelFail(c, "batch dims of X " + shapeStr(x_shape) + " and Y " + shapeStr(y_shape) + " do not broadcast");
  s.out = *full;
  if (!x1) s.out.push_back(m);
  if (!y1) s.out.push_back(n);
  s.out_logical = *full;
  s.out_logical.push_back(m);
  s.out_logical.push_back(n);
  return s;
}

}  // namespace spopt::rt::matmul_plan
