// Accuracy of the float32 fast functions against libm in double, over dense grids.
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_harness.h"
#include "runtime/kernels/fast_math.h"

using namespace kt;

namespace {

double relError(double got, double want) { return std::fabs(got - want) / std::fabs(want); }

double normalCdf64(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

TEST_CASE("fastExp is within a few float ulps of exp on [-87, 88]", "[kernels]") {
  double worst = 0;
  for (int i = 0; i <= 175000; ++i) {
    float x = float(-87.0 + 0.001 * double(i));
    worst = std::max(worst, relError(spopt::rt::fastExp(x), std::exp(double(x))));
  }
  CAPTURE(worst);
  REQUIRE(worst < 5e-7);
  REQUIRE(spopt::rt::fastExp(-1000.0f) >= 0.0f);
  REQUIRE(spopt::rt::fastExp(-1000.0f) < 1e-37f);
  REQUIRE(std::isfinite(spopt::rt::fastExp(1000.0f)));
}

// Phi(x) ~ exp(-x^2 / 2) in the lower tail: a float rounding of x^2/2 alone moves the result by
// x^2/2 * 6e-8 relative, so the bound grows with x^2 (the condition of the function in float).
double tailBound(double x) { return 1e-6 + 2.5e-7 * x * x; }

TEST_CASE("normalCdf keeps its relative accuracy in the lower tail", "[kernels]") {
  for (int i = 0; i <= 25000; ++i) {
    float x = float(-12.0 + 0.001 * double(i));
    CAPTURE(x);
    REQUIRE(relError(spopt::rt::normalCdf(x), normalCdf64(double(x))) <= tailBound(x));
  }
}

TEST_CASE("float32 gelu (both forms) and its grad stay close to float64 over a dense range", "[kernels]") {
  int64_t n = 20001;
  std::vector<double> xs;
  for (int64_t i = 0; i < n; ++i) xs.push_back(double(float(-10.0 + 0.001 * double(i))));
  for (bool approx : {false, true}) {
    CAPTURE(approx);
    auto run = [&](DType t) {
      OpRunner r("gelu");
      r.in("X", {fromDoubles(t, {n}, xs)}).out("Out", {Tensor(t, {n})}).attr("approximate", approx ? "true" : "false").run();
      OpRunner g("gelu_grad");
      g.in("X", {fromDoubles(t, {n}, xs)}).in("Out@GRAD", {fromDoubles(t, {n}, std::vector<double>(size_t(n), 1.0))});
      g.out("X@GRAD", {Tensor(t, {n})}).attr("approximate", approx ? "true" : "false").run();
      return std::make_pair(toDoubles(r.result("Out")), toDoubles(g.result("X@GRAD")));
    };
    auto [y32, d32] = run(DType::Float32);
    auto [y64, d64] = run(DType::Float64);
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(xs[size_t(i)]);
      REQUIRE(std::fabs(y32[size_t(i)] - y64[size_t(i)]) <= tailBound(xs[size_t(i)]) * std::fabs(y64[size_t(i)]));
      REQUIRE(std::fabs(d32[size_t(i)] - d64[size_t(i)]) <= 2e-6 * (1 + std::fabs(d64[size_t(i)])));
    }
  }
}

// softmax rows take e^x sixteen lanes at a time (softmax_row.h); a replay's bits must not depend
// on which elements of a row fall in the vector loop and which in its scalar tail.
TEST_CASE("fastExp on sixteen lanes has the bits of the scalar fastExp", "[kernels]") {
  std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 87.9f, 88.0f, 88.1f, -86.9f, -87.0f, -87.1f};
  for (int i = 0; i <= 400000; ++i) xs.push_back(float(-100.0 + 0.0005 * double(i)));
  while (xs.size() % 16) xs.push_back(0.5f);
  for (size_t i = 0; i < xs.size(); i += 16) {
    spopt::rt::Floats16 v;
    std::memcpy(&v, &xs[i], sizeof v);
    v = spopt::rt::fastExp(v);
    for (size_t l = 0; l < 16; ++l) {
      const float scalar = spopt::rt::fastExp(xs[i + l]);
      CAPTURE(xs[i + l], scalar, v[l]);
      if (std::isnan(scalar)) REQUIRE(std::isnan(v[l]));
      else REQUIRE(std::bit_cast<uint32_t>(v[l]) == std::bit_cast<uint32_t>(scalar));
    }
  }
}
