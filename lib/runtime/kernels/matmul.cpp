// matmul_v2 and matmul_v2_grad through OpenBLAS. Every product is one "broadcast GEMM":
// C[b] (+)= op(A[b]) * op(B[b]) over numpy-broadcast batch dims, with C's batch possibly smaller
// than the broadcast one (a gradient summed over broadcast dims). The common transformer shapes
// fold into a single GEMM: a 2-D weight broadcast over activations folds the batch into M, and its
// gradient folds the batch into K.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
              int(k), 1.0f, a, int(lda), b, int(ldb), beta, c, int(ldc));
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(n),
              int(k), 1.0, a, int(lda), b, int(ldb), beta, c, int(ldc));
}

using Dims = std::vector<int64_t>;

Dims batchOf(const Dims& s) { return Dims(s.begin(), s.end() - 2); }

// numpy broadcast of two batch shapes, or nullopt when they do not broadcast.
std::optional<Dims> broadcastBatch(const Dims& a, const Dims& b) {
  size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Element strides of each batch index of `full` into a tensor with batch `own` (right-aligned;
// 0 where `own` is broadcast), given the matrix size of one batch entry.
Dims batchStrides(const Dims& own, const Dims& full, int64_t matrix) {
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
template <typename T>
void broadcastGemm(const T* a, const Dims& as, bool ta, const T* b, const Dims& bs, bool tb, T* c,
                   const Dims& cs) {
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
    std::fill(c, c + c_size, T(0));
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
  if (accumulate) std::fill(c, c + c_size, T(0));
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

MatmulShapes matmulShapes(const KernelContext& c, const Tensor& x, const Tensor& y) {
  MatmulShapes s;
  s.x = x.shape();
  s.y = y.shape();
  if (s.x.empty() || s.y.empty())
    kernelFail(c, "X " + shapeStr(s.x) + " and Y " + shapeStr(s.y) + " must have at least one dim");
  bool x1 = s.x.size() == 1, y1 = s.y.size() == 1;
  s.tx = !x1 && boolAttr(c, "trans_x", false);
  s.ty = !y1 && boolAttr(c, "trans_y", false);
  if (x1) s.x = {1, s.x[0]};
  if (y1) s.y = {s.y[0], 1};
  int64_t m = s.tx ? s.x.back() : s.x[s.x.size() - 2];
  int64_t kx = s.tx ? s.x[s.x.size() - 2] : s.x.back();
  int64_t ky = s.ty ? s.y.back() : s.y[s.y.size() - 2];
  int64_t n = s.ty ? s.y[s.y.size() - 2] : s.y.back();
  if (kx != ky)
    kernelFail(c, "X " + shapeStr(x.shape()) + " and Y " + shapeStr(y.shape()) + " have different inner dims" +
                      (s.tx || s.ty ? " (trans_x=" + std::to_string(s.tx) + ", trans_y=" + std::to_string(s.ty) + ")"
                                    : ""));
  auto full = broadcastBatch(batchOf(s.x), batchOf(s.y));
  if (!full)
    kernelFail(c, "batch dims of X " + shapeStr(x.shape()) + " and Y " + shapeStr(y.shape()) + " do not broadcast");
  s.out = *full;
  if (!x1) s.out.push_back(m);
  if (!y1) s.out.push_back(n);
  s.out_logical = *full;
  s.out_logical.push_back(m);
  s.out_logical.push_back(n);
  return s;
}

// A 0-D result may also be declared [1].
void requireOutShape(const KernelContext& c, std::string_view name, const Tensor& t, const Dims& expected) {
  if (expected.empty() && t.shape() == Dims{1}) return;
  requireShape(c, name, t, expected, "matmul of X and Y");
}

void matmulV2(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  MatmulShapes s = matmulShapes(c, x, y);
  requireOutShape(c, "Out", out, s.out);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    broadcastGemm(x.data<T>(), s.x, s.tx, y.data<T>(), s.y, s.ty, out.data<T>(), s.out_logical);
  });
}

// Out = op(X) op(Y). With G = Out@GRAD:
//   dX = G op(Y)^T   stored transposed when trans_x: dX = op(Y) G^T
//   dY = op(X)^T G   stored transposed when trans_y: dY = G^T op(X)
void matmulV2Grad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dy = optionalOutput(c, "Y@GRAD");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out@GRAD", g, "X", x);
  MatmulShapes s = matmulShapes(c, x, y);
  requireOutShape(c, "Out@GRAD", g, s.out);
  if (dx) {
    requireSameStorage(c, "X@GRAD", *dx, "X", x);
    requireShape(c, "X@GRAD", *dx, x.shape(), "the shape of X");
  }
  if (dy) {
    requireSameStorage(c, "Y@GRAD", *dy, "Y", y);
    requireShape(c, "Y@GRAD", *dy, y.shape(), "the shape of Y");
  }
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    if (dx) {
      if (!s.tx)
        broadcastGemm(gp, s.out_logical, false, y.data<T>(), s.y, !s.ty, dx->data<T>(), s.x);
      else
        broadcastGemm(y.data<T>(), s.y, s.ty, gp, s.out_logical, true, dx->data<T>(), s.x);
    }
    if (dy) {
      if (!s.ty)
        broadcastGemm(x.data<T>(), s.x, !s.tx, gp, s.out_logical, false, dy->data<T>(), s.y);
      else
        broadcastGemm(gp, s.out_logical, true, x.data<T>(), s.x, s.tx, dy->data<T>(), s.y);
    }
  });
}

}  // namespace

void registerMatmulKernels(KernelTable& t) {
  t.add("matmul_v2", matmulV2);
  t.add("matmul_v2_grad", matmulV2Grad);
}

}  // namespace spopt::rt
