// matmul_v2, Paddle 1.x's matmul (a scaled matmul_v2) and their gradients through OpenBLAS, planned by matmul_plan.h (shared with the
// nccl backend's cuBLAS path).
#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/kernels/blas.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/matmul_plan.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

using matmul_plan::Dims;
using matmul_plan::MatmulShapes;
using matmul_plan::matmulShapes;

// The plan's GEMMs are collected, then run: the batch entries of attention's products (32 GEMMs of
// 128x128x64 for a GPT layer) share out over the threads one entry each, a lone GEMM cuts itself
// into blocks (blas.h). Entries that accumulate into one C (a gradient summed over broadcast dims)
// run in order on the calling thread.
template <typename T>
void broadcastGemm(const T* a, const Dims& as, bool ta, const T* b, const Dims& bs, bool tb, T* c, const Dims& cs) {
  struct Call {
    bool ta, tb;
    int64_t m, n, k;
    const T* a;
    int64_t lda;
    const T* b;
    int64_t ldb;
    T beta;
    T* c;
    int64_t ldc;
  };
  std::vector<Call> calls;
  bool accumulate = false;
  matmul_plan::broadcastGemm(a, as, ta, b, bs, tb, c, cs,
                             [&](bool ta_, bool tb_, int64_t m, int64_t n, int64_t k, const T* a_, int64_t lda, const T* b_,
                                 int64_t ldb, T beta, T* c_, int64_t ldc) {
                               calls.push_back({ta_, tb_, m, n, k, a_, lda, b_, ldb, beta, c_, ldc});
                               accumulate = accumulate || beta != T(0);
                             },
                             [](T* c_, int64_t count) { std::fill(c_, c_ + count, T(0)); });
  // A batch runs entry by entry, each one OpenBLAS call whatever the thread count, so its numbers
  // do not depend on it (blas.h); only a lone GEMM is cut into blocks.
  if (calls.size() == 1) {
    const Call& g = calls.front();
    return blasGemm(g.ta, g.tb, g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc);
  }
  auto run = [&](int64_t i) {
    const Call& g = calls[size_t(i)];
    blasGemmCall(g.ta, g.tb, g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc);
  };
  parallelFor(int64_t(calls.size()), accumulate ? 1 : gemmWidth(), run);
}

// A 0-D result may also be declared [1].
void requireOutShape(const KernelContext& c, std::string_view name, const Tensor& t, const Dims& expected) {
  if (expected.empty() && t.shape() == Dims{1}) return;
  requireShape(c, name, t, expected, "matmul of X and Y");
}

// The two spellings of the transpose flags, and matmul_v1's scale of the product.
struct MatmulAttrs {
  std::string_view tx, ty;
  bool scaled;
};
constexpr MatmulAttrs kV2{"trans_x", "trans_y", false};
constexpr MatmulAttrs kV1{"transpose_X", "transpose_Y", true};

// t *= alpha (alpha applied after the GEMM: a power of two, as attention's 1/sqrt(d) often is, is
// exact either way).
void scaleBy(const KernelContext& c, Tensor& t, const MatmulAttrs& a) {
  double alpha = a.scaled ? floatAttr(c, "alpha", 1.0) : 1.0;
  if (alpha == 1.0) return;
  dispatchFloat(c, "Out", t, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] *= T(alpha);
  });
}

template <const MatmulAttrs& A> void matmul(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  Tensor& out = requireOutput(c, "Out");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  MatmulShapes s = matmulShapes(c, x.shape(), y.shape(), A.tx, A.ty);
  requireOutShape(c, "Out", out, s.out);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    broadcastGemm(x.data<T>(), s.x, s.tx, y.data<T>(), s.y, s.ty, out.data<T>(), s.out_logical);
  });
  scaleBy(c, out, A);
}

// Out = op(X) op(Y). With G = Out@GRAD:
//   dX = G op(Y)^T   stored transposed when trans_x: dX = op(Y) G^T
//   dY = op(X)^T G   stored transposed when trans_y: dY = G^T op(X)
// (times alpha for matmul_v1)
template <const MatmulAttrs& A> void matmulGrad(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  const Tensor& y = requireInput(c, "Y");
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor* dx = optionalOutput(c, "X@GRAD");
  Tensor* dy = optionalOutput(c, "Y@GRAD");
  requireSameStorage(c, "Y", y, "X", x);
  requireSameStorage(c, "Out@GRAD", g, "X", x);
  MatmulShapes s = matmulShapes(c, x.shape(), y.shape(), A.tx, A.ty);
  requireOutShape(c, "Out@GRAD", g, s.out);
  requireOperandGrads(c, x, y, dx, dy);
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
  if (dx) scaleBy(c, *dx, A);
  if (dy) scaleBy(c, *dy, A);
}

}  // namespace

void registerMatmulKernels(KernelTable& t) {
  t.add("matmul", matmul<kV2>);
  t.add("matmul_grad", matmulGrad<kV2>);
  t.add("matmul_v1", matmul<kV1>);
  t.add("matmul_v1_grad", matmulGrad<kV1>);
}

}  // namespace spopt::rt
