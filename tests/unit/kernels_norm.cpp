// layer_norm / layer_norm_grad against a float64 reference and finite differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

struct NormCase {
  Dims x;
  int begin;
  bool scale, bias;
};

const std::vector<NormCase>& normCases() {
  static const std::vector<NormCase> c{
      {{4, 6}, 1, true, true},
      {{2, 3, 8}, 2, true, true},
      {{2, 3, 4}, 1, true, false},
      {{3, 5}, 1, false, false},
      {{2, 3, 4}, -1, true, true},
  };
  return c;
}

struct Split {
  int64_t rows, cols;
};
Split split(const NormCase& c) {
  int b = c.begin < 0 ? c.begin + int(c.x.size()) : c.begin;
  int64_t rows = 1;
  for (int i = 0; i < b; ++i) rows *= c.x[size_t(i)];
  return {rows, numel(c.x) / rows};
}

std::vector<double> refLayerNorm(const NormCase& c, const std::vector<double>& x, const std::vector<double>& g,
                                 const std::vector<double>& b, std::vector<double>* mean, std::vector<double>* var) {
  Split s = split(c);
  std::vector<double> y(x.size());
  mean->assign(size_t(s.rows), 0);
  var->assign(size_t(s.rows), 0);
  for (int64_t r = 0; r < s.rows; ++r) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < s.cols; ++j) m += x[size_t(r * s.cols + j)];
    m /= double(s.cols);
    for (int64_t j = 0; j < s.cols; ++j) v += (x[size_t(r * s.cols + j)] - m) * (x[size_t(r * s.cols + j)] - m);
    v /= double(s.cols);
    (*mean)[size_t(r)] = m;
    (*var)[size_t(r)] = v;
    for (int64_t j = 0; j < s.cols; ++j) {
      double n = (x[size_t(r * s.cols + j)] - m) / std::sqrt(v + 1e-5);
      y[size_t(r * s.cols + j)] = n * (c.scale ? g[size_t(j)] : 1.0) + (c.bias ? b[size_t(j)] : 0.0);
    }
  }
  return y;
}

struct NormOut {
  Tensor y, mean, var;
};

NormOut runLayerNorm(const NormCase& c, DType t, const std::vector<double>& x, const std::vector<double>& g,
                     const std::vector<double>& b) {
  Split s = split(c);
  OpRunner r("layer_norm");
  r.in("X", {fromDoubles(t, c.x, x)});
  if (c.scale) r.in("Scale", {fromDoubles(t, {s.cols}, g)});
  if (c.bias) r.in("Bias", {fromDoubles(t, {s.cols}, b)});
  r.out("Y", {Tensor(t, c.x)}).out("Mean", {Tensor(t, {s.rows})}).out("Variance", {Tensor(t, {s.rows})});
  r.attr("begin_norm_axis", std::to_string(c.begin)).attr("epsilon", "1e-5").run();
  return {r.result("Y"), r.result("Mean"), r.result("Variance")};
}

}  // namespace

TEST_CASE("layer_norm matches a float64 reference", "[kernels]") {
  // Rows of 1024 and 1043 values take the float32 statistics' vector lanes and their tail.
  std::vector<NormCase> cases = normCases();
  cases.push_back({{3, 1024}, 1, true, true});
  cases.push_back({{2, 1043}, 1, true, false});
  for (const NormCase& c : cases)
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(c.x), c.begin, c.scale, c.bias, spopt::dtypeName(t));
      Split s = split(c);
      std::vector<double> x = toDoubles(randomTensor(t, c.x)), g = toDoubles(randomTensor(t, {s.cols})),
                          b = toDoubles(randomTensor(t, {s.cols}));
      std::vector<double> mean, var;
      std::vector<double> want = refLayerNorm(c, x, g, b, &mean, &var);
      NormOut got = runLayerNorm(c, t, x, g, b);
      double tol = t == DType::Float64 ? 1e-12 : 1e-5;
      requireClose(got.y, want, tol);
      requireClose(got.mean, mean, tol);
      requireClose(got.var, var, tol);
    }
}

TEST_CASE("layer_norm_grad matches finite differences for X, Scale and Bias", "[kernels]") {
  for (const NormCase& c : normCases()) {
    CAPTURE(dimsJson(c.x), c.begin, c.scale, c.bias);
    Split s = split(c);
    std::map<std::string, std::vector<double>> in{
        {"X", randomValues(numel(c.x))}, {"Scale", randomValues(s.cols)}, {"Bias", randomValues(s.cols)}};
    std::vector<double> proj = randomValues(numel(c.x));
    Forward fwd = [&](const auto& v) {
      return toDoubles(runLayerNorm(c, DType::Float64, v.at("X"), v.at("Scale"), v.at("Bias")).y);
    };
    for (DType t : floatTypes()) {
      NormOut f = runLayerNorm(c, t, in["X"], in["Scale"], in["Bias"]);
      OpRunner g("layer_norm_grad");
      g.in("X", {fromDoubles(t, c.x, in["X"])});
      if (c.scale) g.in("Scale", {fromDoubles(t, {s.cols}, in["Scale"])});
      if (c.bias) g.in("Bias", {fromDoubles(t, {s.cols}, in["Bias"])});
      g.in("Mean", {f.mean}).in("Variance", {f.var}).in("Y@GRAD", {fromDoubles(t, c.x, proj)});
      g.out("X@GRAD", {Tensor(t, c.x)});
      if (c.scale) g.out("Scale@GRAD", {Tensor(t, {s.cols})});
      if (c.bias) g.out("Bias@GRAD", {Tensor(t, {s.cols})});
      g.attr("begin_norm_axis", std::to_string(c.begin)).attr("epsilon", "1e-5").run();
      double tol = t == DType::Float64 ? 1e-6 : 1e-4;
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), tol);
      if (c.scale) requireGradMatchesFD(fwd, in, "Scale", proj, toDoubles(g.result("Scale@GRAD")), tol);
      if (c.bias) requireGradMatchesFD(fwd, in, "Bias", proj, toDoubles(g.result("Bias@GRAD")), tol);
    }
  }
}

TEST_CASE("layer_norm keeps float32 statistics accurate for offset rows", "[kernels]") {
  // Values 1000 + small noise: a one-pass float E[x^2]-E[x]^2 loses the variance entirely.
  int64_t n = 4096;
  std::vector<double> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = double(float(1000.0 + 0.01 * double((i * 37) % 101 - 50)));
  NormCase c{{1, n}, 1, false, false};
  std::vector<double> mean, var;
  refLayerNorm(c, x, {}, {}, &mean, &var);
  NormOut got = runLayerNorm(c, DType::Float32, x, {}, {});
  requireClose(got.mean, mean, 1e-7);
  requireClose(got.var, var, 1e-5);
}

TEST_CASE("layer_norm rejects a Scale of the wrong size", "[kernels]") {
  OpRunner r("layer_norm");
  r.in("X", {randomTensor(DType::Float32, {2, 4})}).in("Scale", {randomTensor(DType::Float32, {3})});
  r.out("Y", {Tensor(DType::Float32, {2, 4})});
  REQUIRE_THROWS_WITH(r.run(), Catch::Contains("Scale [3] should hold 4 values"));
}
