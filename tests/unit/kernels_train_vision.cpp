// batch_norm, mul (+ grads), top_k_v2, accuracy and momentum: hand-computed cases and finite
// differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

struct BnOut {
  Tensor y, mean_out, var_out, saved_mean, saved_var;
};

BnOut runBatchNorm(const Dims& x_shape, DType t, const std::vector<double>& x, const std::vector<double>& scale,
                   const std::vector<double>& bias, const std::vector<double>& mean, const std::vector<double>& var,
                   bool global = false, double eps = 1e-5) {
  int64_t c = x_shape[1];
  OpRunner r("batch_norm");
  r.in("X", {fromDoubles(t, x_shape, x)}).in("Scale", {fromDoubles(DType::Float32, {c}, scale)});
  r.in("Bias", {fromDoubles(DType::Float32, {c}, bias)}).in("Mean", {fromDoubles(DType::Float32, {c}, mean)});
  r.in("Variance", {fromDoubles(DType::Float32, {c}, var)});
  r.out("Y", {Tensor(t, x_shape)}).out("MeanOut", {Tensor(DType::Float32, {c})}).out("VarianceOut", {Tensor(DType::Float32, {c})});
  r.out("SavedMean", {Tensor(DType::Float32, {c})}).out("SavedVariance", {Tensor(DType::Float32, {c})});
  r.attr("epsilon", std::to_string(eps)).attr("momentum", "0.9").attr("data_layout", "\"NCHW\"").attr("is_test", "false");
  r.attr("use_global_stats", global ? "true" : "false").run();
  return {r.result("Y"), r.result("MeanOut"), r.result("VarianceOut"), r.result("SavedMean"), r.result("SavedVariance")};
}

}  // namespace

TEST_CASE("batch_norm: batch statistics, running statistics and the saved inverse std", "[kernels]") {
  // One channel holding 1, 2, 3, 4: mean 2.5, population variance 1.25.
  BnOut o = runBatchNorm({2, 1, 1, 2}, DType::Float64, {1, 2, 3, 4}, {2}, {1}, {0}, {1}, false, 0.0);
  double inv = 1 / std::sqrt(1.25);
  requireClose(o.y, {-1.5 * inv * 2 + 1, -0.5 * inv * 2 + 1, 0.5 * inv * 2 + 1, 1.5 * inv * 2 + 1}, 1e-12);
  requireClose(o.mean_out, {0.1 * 2.5}, 1e-7);
  requireClose(o.var_out, {0.9 + 0.1 * 1.25}, 1e-7);
  requireClose(o.saved_mean, {2.5}, 1e-7);
  requireClose(o.saved_var, {inv}, 1e-7);
  // Global statistics: the running ones normalise, and stay as they are.
  BnOut g = runBatchNorm({2, 1, 1, 2}, DType::Float64, {1, 2, 3, 4}, {2}, {1}, {2}, {4}, true, 0.0);
  requireClose(g.y, {0, 1, 2, 3}, 1e-12);
  requireClose(g.mean_out, {2}, 0);
  requireClose(g.var_out, {4}, 0);
}

TEST_CASE("batch_norm_grad matches finite differences for X, Scale and Bias", "[kernels]") {
  for (const Dims& shape : {Dims{2, 3, 2, 2}, Dims{4, 2}, Dims{1, 2, 3, 5}}) {
    CAPTURE(dimsJson(shape));
    int64_t c = shape[1];
    std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(shape))}, {"Scale", randomValues(c)}, {"Bias", randomValues(c)}};
    std::vector<double> zeros(size_t(c), 0.0), ones(size_t(c), 1.0), proj = randomValues(numel(shape));
    // Scale and Bias are float32 tensors: the reference keeps them exactly representable.
    for (auto* v : {&in["Scale"], &in["Bias"]})
      for (double& e : *v) e = double(float(e));
    Forward fwd = [&](const auto& v) {
      std::vector<double> s = v.at("Scale"), b = v.at("Bias");
      // A float64 forward through float32 Scale / Bias slots would round the perturbation away:
      // fold them in here instead (Y = Scale * Y0 + Bias with Y0 the unit-scale output).
      std::vector<double> y0 = toDoubles(runBatchNorm(shape, DType::Float64, v.at("X"), ones, zeros, zeros, ones).y);
      int64_t inner = numel(shape) / (shape[0] * c);
      for (size_t i = 0; i < y0.size(); ++i) {
        size_t ch = (i / size_t(inner)) % size_t(c);
        y0[i] = y0[i] * s[ch] + b[ch];
      }
      return y0;
    };
    for (DType t : floatTypes()) {
      BnOut f = runBatchNorm(shape, t, in["X"], in["Scale"], in["Bias"], zeros, ones);
      OpRunner g("batch_norm_grad");
      g.in("X", {fromDoubles(t, shape, in["X"])}).in("Scale", {fromDoubles(DType::Float32, {c}, in["Scale"])});
      g.in("Bias", {fromDoubles(DType::Float32, {c}, in["Bias"])}).in("SavedMean", {f.saved_mean}).in("SavedVariance", {f.saved_var});
      g.in("Y@GRAD", {fromDoubles(t, shape, proj)});
      g.out("X@GRAD", {Tensor(t, shape)}).out("Scale@GRAD", {Tensor(DType::Float32, {c})}).out("Bias@GRAD", {Tensor(DType::Float32, {c})});
      g.attr("epsilon", "1e-05").attr("is_test", "false").attr("data_layout", "\"NCHW\"").run();
      // SavedMean / SavedVariance are float32: the float64 gradient is as close as they are.
      double tol = 1e-4;
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), tol);
      requireGradMatchesFD(fwd, in, "Scale", proj, toDoubles(g.result("Scale@GRAD")), tol);
      requireGradMatchesFD(fwd, in, "Bias", proj, toDoubles(g.result("Bias@GRAD")), tol);
    }
  }
}

namespace {

Tensor runMul(DType t, const Dims& xs, const Dims& ys, const Dims& out, int xn, int yn, const std::vector<double>& x,
              const std::vector<double>& y) {
  OpRunner r("mul");
  r.in("X", {fromDoubles(t, xs, x)}).in("Y", {fromDoubles(t, ys, y)}).out("Out", {Tensor(t, out)});
  r.attr("x_num_col_dims", std::to_string(xn)).attr("y_num_col_dims", std::to_string(yn)).run();
  return r.result("Out");
}

}  // namespace

TEST_CASE("mul flattens X and Y at their num_col_dims", "[kernels]") {
  // X [2,3] x Y [3,2].
  requireClose(runMul(DType::Float32, {2, 3}, {3, 2}, {2, 2}, 1, 1, {1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}), {4, 5, 10, 11}, 0);
  // X [2,1,3] at 1 is [2,3]; Y [3,1,2] at 1 is [3,2]: Out [2,1,2].
  requireClose(runMul(DType::Float64, {2, 1, 3}, {3, 1, 2}, {2, 1, 2}, 1, 1, {1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}), {4, 5, 10, 11}, 0);
  // X [2,2,3] at 2 is [4,3]: Out [2,2,2].
  requireClose(runMul(DType::Float64, {2, 2, 3}, {3, 2}, {2, 2, 2}, 2, 1, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 0, 1}, {1, 0, 0, 1, 1, 1}),
               {4, 5, 10, 11, 1, 0, 1, 1}, 0);
  OpRunner bad("mul");
  bad.in("X", {randomTensor(DType::Float32, {2, 3})}).in("Y", {randomTensor(DType::Float32, {4, 2})}).out("Out", {Tensor(DType::Float32, {2, 2})});
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("has 3 columns but Y [4,2] flattened has 4 rows"));
}

TEST_CASE("mul_grad matches finite differences", "[kernels]") {
  Dims xs{2, 3, 2}, ys{6, 4}, out{2, 4};
  std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(xs))}, {"Y", randomValues(numel(ys))}};
  std::vector<double> proj = randomValues(numel(out));
  Forward fwd = [&](const auto& v) { return toDoubles(runMul(DType::Float64, xs, ys, out, 1, 1, v.at("X"), v.at("Y"))); };
  for (DType t : floatTypes()) {
    OpRunner g("mul_grad");
    g.in("X", {fromDoubles(t, xs, in["X"])}).in("Y", {fromDoubles(t, ys, in["Y"])}).in("Out@GRAD", {fromDoubles(t, out, proj)});
    g.out("X@GRAD", {Tensor(t, xs)}).out("Y@GRAD", {Tensor(t, ys)}).attr("x_num_col_dims", "1").attr("y_num_col_dims", "1").run();
    double tol = t == DType::Float64 ? 1e-6 : 1e-4;
    requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), tol);
    requireGradMatchesFD(fwd, in, "Y", proj, toDoubles(g.result("Y@GRAD")), tol);
  }
}

TEST_CASE("top_k_v2: largest and smallest along an axis, ties to the lower index", "[kernels]") {
  OpRunner r("top_k_v2");
  r.in("X", {fromDoubles(DType::Float32, {2, 4}, {3, 1, 3, 2, 0, 5, -1, 5})});
  r.out("Out", {Tensor(DType::Float32, {2, 2})}).out("Indices", {Tensor(DType::Int64, {2, 2})});
  r.attr("k", "2").attr("axis", "-1").attr("largest", "true").attr("sorted", "true").run();
  requireClose(r.result("Out"), {3, 3, 5, 5}, 0);
  requireClose(r.result("Indices"), {0, 2, 1, 3}, 0);
  OpRunner s("top_k_v2");
  s.in("X", {fromDoubles(DType::Float64, {2, 3}, {4, 1, 0, 2, 5, -3})});
  s.out("Out", {Tensor(DType::Float64, {1, 3})}).out("Indices", {Tensor(DType::Int64, {1, 3})});
  s.attr("k", "1").attr("axis", "0").attr("largest", "false").run();
  requireClose(s.result("Out"), {2, 1, -3}, 0);
  requireClose(s.result("Indices"), {1, 0, 1}, 0);
}

TEST_CASE("accuracy counts rows whose top-k indices hold the label", "[kernels]") {
  OpRunner r("accuracy");
  r.in("Out", {Tensor(DType::Float32, {4, 2})}).in("Indices", {fromDoubles(DType::Int64, {4, 2}, {1, 2, 0, 3, 4, 4, 2, 1})});
  r.in("Label", {fromDoubles(DType::Int64, {4, 1}, {2, 1, 4, 1})});
  r.out("Accuracy", {Tensor(DType::Float32, {1})}).out("Correct", {Tensor(DType::Int32, {1})}).out("Total", {Tensor(DType::Int32, {1})}).run();
  requireClose(r.result("Accuracy"), {0.75}, 0);
  requireClose(r.result("Correct"), {3}, 0);
  requireClose(r.result("Total"), {4}, 0);
}

TEST_CASE("momentum: plain, Nesterov, L2 decay and rescale_grad", "[kernels]") {
  auto run = [](bool nesterov, const char* reg, double rescale) {
    OpRunner r("momentum");
    Tensor p = fromDoubles(DType::Float64, {2}, {1.0, -2.0}), v = fromDoubles(DType::Float64, {2}, {0.5, 0.25});
    r.in("Param", {p}).in("Grad", {fromDoubles(DType::Float64, {2}, {0.2, -0.4})}).in("Velocity", {v});
    r.in("LearningRate", {fromDoubles(DType::Float32, {1}, {0.5})});
    r.out("ParamOut", {p}).out("VelocityOut", {v});  // in place, as the job declares them
    r.attr("mu", "0.9").attr("use_nesterov", nesterov ? "true" : "false").attr("regularization_method", std::string("\"") + reg + "\"");
    r.attr("regularization_coeff", "0.1").attr("rescale_grad", std::to_string(rescale)).run();
    return std::pair{toDoubles(p), toDoubles(v)};
  };
  // g = 0.2, -0.4; v = 0.9 * 0.5 + 0.2 = 0.65, 0.9 * 0.25 - 0.4 = -0.175; p -= 0.5 v.
  auto [p, v] = run(false, "", 1.0);
  REQUIRE_THAT(v[0], Catch::WithinAbs(0.65, 1e-12));
  REQUIRE_THAT(v[1], Catch::WithinAbs(-0.175, 1e-12));
  REQUIRE_THAT(p[0], Catch::WithinAbs(1.0 - 0.325, 1e-12));
  REQUIRE_THAT(p[1], Catch::WithinAbs(-2.0 + 0.0875, 1e-12));
  // Nesterov: p -= 0.5 (g + 0.9 v).
  auto [pn, vn] = run(true, "", 1.0);
  REQUIRE_THAT(pn[0], Catch::WithinAbs(1.0 - 0.5 * (0.2 + 0.9 * 0.65), 1e-12));
  // L2 decay and rescale: g = 2 * 0.2 + 0.1 * 1 = 0.5; v = 0.45 + 0.5 = 0.95.
  auto [pl, vl] = run(false, "l2_decay", 2.0);
  REQUIRE_THAT(vl[0], Catch::WithinAbs(0.95, 1e-12));
  REQUIRE_THAT(pl[0], Catch::WithinAbs(1.0 - 0.475, 1e-12));
}
