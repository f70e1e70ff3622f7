// matmul_v2 / matmul_v2_grad against a float64 triple loop and finite differences.
#include "kernel_harness.h"

#include <cstring>

#include "runtime/cpu_budget.h"
#include "runtime/kernels/blas.h"

using namespace kt;

namespace {

struct MatCase {
  Dims x, y;
  bool tx, ty;
};

// Plain reference: numpy-style batch broadcasting, 1-D operands promoted and their dim dropped.
std::vector<double> refMatmul(const std::vector<double>& x, Dims xs, const std::vector<double>& y, Dims ys, bool tx,
                              bool ty, Dims* out_shape) {
  bool x1 = xs.size() == 1, y1 = ys.size() == 1;
  if (x1) xs = {1, xs[0]}, tx = false;
  if (y1) ys = {ys[0], 1}, ty = false;
  int64_t m = tx ? xs.back() : xs[xs.size() - 2], k = tx ? xs[xs.size() - 2] : xs.back();
  int64_t n = ty ? ys[ys.size() - 2] : ys.back();
  Dims xb(xs.begin(), xs.end() - 2), yb(ys.begin(), ys.end() - 2);
  size_t r = std::max(xb.size(), yb.size());
  while (xb.size() < r) xb.insert(xb.begin(), 1);
  while (yb.size() < r) yb.insert(yb.begin(), 1);
  Dims ob(r);
  for (size_t i = 0; i < r; ++i) ob[i] = std::max(xb[i], yb[i]);
  *out_shape = ob;
  if (!x1) out_shape->push_back(m);
  if (!y1) out_shape->push_back(n);
  int64_t nb = numel(ob);
  std::vector<double> out(size_t(nb * m * n), 0.0);
  for (int64_t b = 0; b < nb; ++b) {
    // unravel b over ob, ravel into xb / yb with broadcast
    int64_t rem = b, xo = 0, yo = 0, xm = 1, ym = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t i = rem % ob[d];
      rem /= ob[d];
      xo += (xb[d] == 1 ? 0 : i) * xm;
      yo += (yb[d] == 1 ? 0 : i) * ym;
      xm *= xb[d];
      ym *= yb[d];
    }
    const double* xp = x.data() + xo * m * k;
    const double* yp = y.data() + yo * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) {
          double a = tx ? xp[l * m + i] : xp[i * k + l];
          double c = ty ? yp[j * k + l] : yp[l * n + j];
          s += a * c;
        }
        out[size_t((b * m + i) * n + j)] = s;
      }
  }
  return out;
}

const std::vector<MatCase>& matmulCases() {
  static const std::vector<MatCase> c{
      {{4, 3}, {3, 5}, false, false},
      {{3, 4}, {3, 5}, true, false},
      {{4, 3}, {5, 3}, false, true},
      {{3, 4}, {5, 3}, true, true},
      {{2, 3, 4, 6}, {6, 5}, false, false},   // 2-D Y broadcast: one folded GEMM
      {{2, 3, 4, 6}, {5, 6}, false, true},    // folded, Y transposed
      {{2, 6, 4}, {6, 5}, true, false},       // 2-D Y with trans_x: per-batch GEMMs
      {{2, 3, 4, 6}, {3, 6, 5}, false, false},  // batched both sides, Y broadcast on dim 0
      {{3, 1, 4, 6}, {2, 6, 5}, false, false},  // both sides broadcast
      {{4, 6}, {3, 6, 5}, false, false},        // 2-D X broadcast over Y's batch
      {{2, 4, 6}, {2, 5, 6}, false, true},
      {{6}, {6, 5}, false, false},              // 1-D X
      {{2, 4, 6}, {6}, false, false},           // 1-D Y
  };
  return c;
}

spopt::rt::Tensor runMatmul(const Tensor& x, const Tensor& y, bool tx, bool ty, const Dims& out_shape) {
  OpRunner r("matmul_v2");
  r.in("X", {x}).in("Y", {y}).out("Out", {Tensor(x.dtype(), out_shape)});
  r.attr("trans_x", tx ? "true" : "false").attr("trans_y", ty ? "true" : "false").run();
  return r.result("Out");
}

}  // namespace

TEST_CASE("matmul_v2 matches a float64 reference", "[kernels]") {
  for (DType t : floatTypes())
    for (const MatCase& mc : matmulCases()) {
      CAPTURE(dimsJson(mc.x), dimsJson(mc.y), mc.tx, mc.ty, spopt::dtypeName(t));
      Tensor x = randomTensor(t, mc.x), y = randomTensor(t, mc.y);
      Dims os;
      std::vector<double> want = refMatmul(toDoubles(x), mc.x, toDoubles(y), mc.y, mc.tx, mc.ty, &os);
      requireClose(runMatmul(x, y, mc.tx, mc.ty, os), want, tolFor(t));
    }
}

TEST_CASE("matmul_v2_grad matches finite differences and a float32 run", "[kernels]") {
  for (const MatCase& mc : matmulCases()) {
    CAPTURE(dimsJson(mc.x), dimsJson(mc.y), mc.tx, mc.ty);
    std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(mc.x))}, {"Y", randomValues(numel(mc.y))}};
    Dims os;
    refMatmul(in["X"], mc.x, in["Y"], mc.y, mc.tx, mc.ty, &os);
    std::vector<double> proj = randomValues(numel(os));
    Forward fwd = [&](const std::map<std::string, std::vector<double>>& v) {
      return toDoubles(runMatmul(fromDoubles(DType::Float64, mc.x, v.at("X")), fromDoubles(DType::Float64, mc.y, v.at("Y")),
                                 mc.tx, mc.ty, os));
    };
    auto grads = [&](DType t) {
      OpRunner g("matmul_v2_grad");
      g.in("X", {fromDoubles(t, mc.x, in["X"])}).in("Y", {fromDoubles(t, mc.y, in["Y"])});
      g.in("Out@GRAD", {fromDoubles(t, os, proj)});
      g.out("X@GRAD", {Tensor(t, mc.x)}).out("Y@GRAD", {Tensor(t, mc.y)});
      g.attr("trans_x", mc.tx ? "true" : "false").attr("trans_y", mc.ty ? "true" : "false").run();
      return std::make_pair(g.result("X@GRAD"), g.result("Y@GRAD"));
    };
    auto [dx, dy] = grads(DType::Float64);
    requireGradMatchesFD(fwd, in, "X", proj, toDoubles(dx));
    requireGradMatchesFD(fwd, in, "Y", proj, toDoubles(dy));
    auto [dx32, dy32] = grads(DType::Float32);
    requireClose(dx32, toDoubles(dx), 1e-4);
    requireClose(dy32, toDoubles(dy), 1e-4);
  }
}

TEST_CASE("matmul_v2_grad skips an absent output", "[kernels]") {
  Tensor x = randomTensor(DType::Float64, {3, 4}), y = randomTensor(DType::Float64, {4, 2});
  OpRunner g("matmul_v2_grad");
  g.in("X", {x}).in("Y", {y}).in("Out@GRAD", {randomTensor(DType::Float64, {3, 2})});
  g.out("Y@GRAD", {Tensor(DType::Float64, {4, 2})}).run();
  std::vector<double> dy = toDoubles(g.result("Y@GRAD"));
  double norm = 0;
  for (double v : dy) norm += std::fabs(v);
  REQUIRE(norm > 0);
}

TEST_CASE("matmul_v2 rejects mismatched shapes with a clear message", "[kernels]") {
  OpRunner r("matmul_v2");
  r.in("X", {Tensor(DType::Float32, {4, 3})}).in("Y", {Tensor(DType::Float32, {5, 2})});
  r.out("Out", {Tensor(DType::Float32, {4, 2})});
  REQUIRE_THROWS_WITH(r.run(), "matmul_v2: X [4,3] and Y [5,2] have different inner dims");
  OpRunner w("matmul_v2");
  w.in("X", {Tensor(DType::Float32, {4, 3})}).in("Y", {Tensor(DType::Float32, {3, 2})});
  w.out("Out", {Tensor(DType::Float32, {4, 3})});
  REQUIRE_THROWS_AS(w.run(), spopt::rt::KernelError);
  OpRunner d("matmul_v2");
  d.in("X", {Tensor(DType::Float32, {4, 3})}).in("Y", {Tensor(DType::Float64, {3, 2})});
  d.out("Out", {Tensor(DType::Float32, {4, 2})});
  REQUIRE_THROWS_AS(d.run(), spopt::rt::KernelError);
}

// decompose-collective-matmul's all-gather form multiplies row blocks of X apart: its rows must
// be the whole GEMM's bits when the blocks are whole 256-row blocks (runtime/kernels/blas.h), and
// the row blocks must not depend on M. A 64-row cut would differ here (OpenBLAS rounds by call
// height), so the test fails if the fixed block goes.
TEST_CASE("a GEMM's rows are bitwise those of a GEMM on whole 256-row blocks of its rows", "[kernels]") {
  using spopt::rt::kGemmRowBlock;
  spopt::rt::configureCpuBudget(1, 1);  // as every replay runs: without a budget a GEMM is one OpenBLAS call
  const int64_t m = 4 * kGemmRowBlock, n = 160, k = 96;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), whole(size_t(m * n)), part(size_t(m * n));
  uint32_t seed = 12345;
  auto next = [&] { return float(int32_t((seed = seed * 1664525u + 1013904223u) >> 8) % 2001 - 1000) / 997.0f; };
  for (float& x : a) x = next();
  for (float& x : b) x = next();
  spopt::rt::blasGemm(false, false, m, n, k, a.data(), k, b.data(), n, 0.0f, whole.data(), n);
  for (int64_t rows : {kGemmRowBlock, 2 * kGemmRowBlock}) {
    for (int64_t lo = 0; lo < m; lo += rows)  // separate copies, as the chunks of a ring are
    {
      std::vector<float> chunk(a.begin() + lo * k, a.begin() + (lo + rows) * k);
      spopt::rt::blasGemm(false, false, rows, n, k, chunk.data(), k, b.data(), n, 0.0f, part.data() + lo * n, n);
    }
    CHECK(std::memcmp(whole.data(), part.data(), whole.size() * sizeof(float)) == 0);
  }
}
