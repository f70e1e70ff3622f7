// matmul_v2 and matmul_v2_grad through OpenBLAS, planned by matmul_plan.h (shared with the
// nccl backend's cuBLAS path).
#include <algorithm>
#include <cstring>

#include "runtime/kernels/blas.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/matmul_plan.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

using matmul_plan::Dims;
using matmul_plan::MatmulShapes;
using matmul_plan::matmulShapes;

template <typename T>
void broadcastGemm(const T* a, const Dims& as, bool ta, const T* b, const Dims& bs, bool tb, T* c, const Dims& cs) {
  matmul_plan::broadcastGemm(a, as, ta, b, bs, tb, c, cs,
                             [](bool ta_, bool tb_, int64_t m, int64_t n, int64_t k, const T* a_, int64_t lda, const T* b_,
                                int64_t ldb, T beta, T* c_, int64_t ldc) { blasGemm(ta_, tb_, m, n, k, a_, lda, b_, ldb, beta, c_, ldc); },
                             [](T* c_, int64_t count) { std::fill(c_, c_ + count, T(0)); });
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
  MatmulShapes s = matmulShapes(c, x.shape(), y.shape());
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
  MatmulShapes s = matmulShapes(c, x.shape(), y.shape());
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
  t.add("matmul", matmulV2);
  t.add("matmul_grad", matmulV2Grad);
}

}  // namespace spopt::rt
