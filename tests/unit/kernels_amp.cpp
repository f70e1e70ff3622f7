// cast, check_finite_and_unscale, update_loss_scaling, squared_l2_norm, sqrt, clip_by_norm and
// elementwise max / min against float64 references written here, grads by finite differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

Tensor runAmpUnary(const char* type, const Tensor& x, const Dims& out_shape, const char* attr = nullptr, const char* value = nullptr) {
  OpRunner r(type);
  r.in("X", {x}).out("Out", {Tensor(x.dtype(), out_shape)});
  if (attr) r.attr(attr, value);
  r.run();
  return r.result("Out");
}

std::vector<double> ampPositiveValues(int64_t n) {
  std::vector<double> v = randomValues(n);
  for (double& x : v) x = std::fabs(x) + 0.5;
  return v;
}

// A double as JSON text that reads back to the same double.
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

TEST_CASE("cast converts between storages as Paddle's static_cast does", "[kernels]") {
  std::vector<double> v{-1.75, 2.9, 0.0, 3.0, -0.5};
  Tensor x = fromDoubles(DType::Float64, {5}, v);
  auto cast = [&](const Tensor& in, DType to) {
    OpRunner r("cast");
    r.in("X", {in}).out("Out", {Tensor(to, in.shape())}).run();
    return toDoubles(r.result("Out"));
  };
  CHECK(cast(x, DType::Float32) == std::vector<double>{-1.75, double(2.9f), 0.0, 3.0, -0.5});
  CHECK(cast(x, DType::Int64) == std::vector<double>{-1, 2, 0, 3, 0});  // toward zero
  CHECK(cast(x, DType::Bool) == std::vector<double>{1, 1, 0, 1, 1});
  CHECK(cast(fromDoubles(DType::Int64, {3}, {2, 0, -4}), DType::Bool) == std::vector<double>{1, 0, 1});
  CHECK(cast(fromDoubles(DType::Int64, {3}, {2, 0, -4}), DType::Float64) == std::vector<double>{2, 0, -4});
  // cast to a half dtype is a plain float32 copy here; the executor rounds what it stores.
  CHECK(cast(x, DType::BFloat16) == cast(x, DType::Float32));
  OpRunner bad("cast");
  bad.in("X", {x}).out("Out", {Tensor(DType::Float32, {4})});
  REQUIRE_THROWS_AS(bad.run(), spopt::rt::KernelError);
}

TEST_CASE("check_finite_and_unscale divides every X by Scale and flags non-finite values", "[kernels]") {
  for (DType t : floatTypes()) {
    std::vector<double> a = randomValues(6), b = randomValues(4);
    const double scale = 1024.0 * 3;  // 1/scale is inexact: Paddle multiplies by it
    auto run = [&](const std::vector<double>& bv) {
      OpRunner r("check_finite_and_unscale");
      r.in("X", {fromDoubles(t, {2, 3}, a), fromDoubles(t, {4}, bv)}).in("Scale", {fromDoubles(t, {1}, {scale})});
      r.out("Out", {Tensor(t, {2, 3}), Tensor(t, {4})}).out("FoundInfinite", {Tensor(DType::Bool, {1})}).run();
      return r;
    };
    OpRunner r = run(b);
    std::vector<double> wa, wb;
    for (double x : a) wa.push_back(x / scale);
    for (double x : b) wb.push_back(x / scale);
    requireClose(r.result("Out", 0), wa, tolFor(t));
    requireClose(r.result("Out", 1), wb, tolFor(t));
    CHECK(toDoubles(r.result("FoundInfinite"))[0] == 0);
    for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
      std::vector<double> bb = b;
      bb[2] = bad;
      CHECK(toDoubles(run(bb).result("FoundInfinite"))[0] == 1);
    }
  }
}

namespace {
// Paddle's dynamic loss scaling, restated for the test.
struct ScalerState {
  double scale;
  int64_t good, bad;
};
ScalerState referenceStep(ScalerState s, bool found, int64_t incr_n, int64_t decr_n, double incr, double decr) {
  if (found) {
    s.good = 0;
    s.bad += 1;
    if (s.bad == decr_n) s.scale = std::max(1.0, s.scale * decr), s.bad = 0;
  } else {
    s.bad = 0;
    s.good += 1;
    if (s.good == incr_n) s.scale = std::isfinite(s.scale * incr) ? s.scale * incr : s.scale, s.good = 0;
  }
  return s;
}
}  // namespace

TEST_CASE("update_loss_scaling follows Paddle's dynamic loss scaling", "[kernels]") {
  std::bernoulli_distribution coin(0.4);
  ScalerState want{4.0, 0, 0}, got = want;
  for (int step = 0; step < 60; ++step) {
    bool found = coin(rng());
    std::vector<double> xv = randomValues(5);
    OpRunner r("update_loss_scaling");
    r.in("X", {fromDoubles(DType::Float32, {5}, xv)}).in("FoundInfinite", {fromDoubles(DType::Bool, {1}, {double(found)})});
    r.in("PrevLossScaling", {fromDoubles(DType::Float32, {1}, {got.scale})});
    r.in("InGoodSteps", {fromDoubles(DType::Int32, {1}, {double(got.good)})}).in("InBadSteps", {fromDoubles(DType::Int32, {1}, {double(got.bad)})});
    r.out("Out", {Tensor(DType::Float32, {5})}).out("LossScaling", {Tensor(DType::Float32, {1})});
    r.out("OutGoodSteps", {Tensor(DType::Int32, {1})}).out("OutBadSteps", {Tensor(DType::Int32, {1})});
    r.attr("incr_every_n_steps", "3").attr("decr_every_n_nan_or_inf", "2").attr("incr_ratio", "2.0").attr("decr_ratio", "0.5");
    r.run();
    want = referenceStep(want, found, 3, 2, 2.0, 0.5);
    got = {toDoubles(r.result("LossScaling"))[0], int64_t(toDoubles(r.result("OutGoodSteps"))[0]), int64_t(toDoubles(r.result("OutBadSteps"))[0])};
    CAPTURE(step, found);
    CHECK(got.scale == want.scale);
    CHECK(got.good == want.good);
    CHECK(got.bad == want.bad);
    requireClose(r.result("Out"), found ? std::vector<double>(5, 0.0) : toDoubles(fromDoubles(DType::Float32, {5}, xv)), 0);
  }
}

TEST_CASE("update_loss_scaling with stop_update keeps the scale and the counters", "[kernels]") {
  OpRunner r("update_loss_scaling");
  r.in("X", {fromDoubles(DType::Float32, {2}, {1, 2})}).in("FoundInfinite", {fromDoubles(DType::Bool, {1}, {1})});
  r.in("PrevLossScaling", {fromDoubles(DType::Float32, {1}, {8})});
  r.in("InGoodSteps", {fromDoubles(DType::Int32, {1}, {5})}).in("InBadSteps", {fromDoubles(DType::Int32, {1}, {1})});
  r.out("Out", {Tensor(DType::Float32, {2})}).out("LossScaling", {Tensor(DType::Float32, {1})});
  r.out("OutGoodSteps", {Tensor(DType::Int32, {1})}).out("OutBadSteps", {Tensor(DType::Int32, {1})});
  r.attr("decr_every_n_nan_or_inf", "2").attr("stop_update", "true").run();
  CHECK(toDoubles(r.result("LossScaling"))[0] == 8);
  CHECK(toDoubles(r.result("OutGoodSteps"))[0] == 5);
  CHECK(toDoubles(r.result("OutBadSteps"))[0] == 1);
  CHECK(toDoubles(r.result("Out")) == std::vector<double>{0, 0});  // still zeroed: the step is skipped
}

TEST_CASE("squared_l2_norm, sqrt and clip_by_norm match a float64 reference", "[kernels]") {
  for (DType t : floatTypes()) {
    CAPTURE(spopt::dtypeName(t));
    Tensor x = randomTensor(t, {3, 7});
    std::vector<double> xv = toDoubles(x);
    double ss = 0;
    for (double v : xv) ss += v * v;
    requireClose(runAmpUnary("squared_l2_norm", x, {1}), {ss}, tolFor(t));
    Tensor p = fromDoubles(t, {3, 7}, ampPositiveValues(21));
    std::vector<double> want;
    for (double v : toDoubles(p)) want.push_back(std::sqrt(v));
    requireClose(runAmpUnary("sqrt", p, {3, 7}), want, tolFor(t));
    for (double max_norm : {std::sqrt(ss) / 3, std::sqrt(ss) * 2}) {
      std::vector<double> clipped;
      for (double v : xv) clipped.push_back(std::sqrt(ss) > max_norm ? v * max_norm / std::sqrt(ss) : v);
      requireClose(runAmpUnary("clip_by_norm", x, {3, 7}, "max_norm", exact(max_norm).c_str()), clipped, std::max(tolFor(t), 1e-9));
    }
  }
}

TEST_CASE("squared_l2_norm_grad and sqrt_grad match finite differences", "[kernels]") {
  Dims s{4, 5};
  std::map<std::string, std::vector<double>> in{{"X", randomValues(20)}};
  std::vector<double> proj1 = randomValues(1);
  Forward norm = [&](const std::map<std::string, std::vector<double>>& v) {
    return toDoubles(runAmpUnary("squared_l2_norm", fromDoubles(DType::Float64, s, v.at("X")), {1}));
  };
  OpRunner g("squared_l2_norm_grad");
  g.in("X", {fromDoubles(DType::Float64, s, in["X"])}).in("Out@GRAD", {fromDoubles(DType::Float64, {1}, proj1)});
  g.out("X@GRAD", {Tensor(DType::Float64, s)}).run();
  requireGradMatchesFD(norm, in, "X", proj1, toDoubles(g.result("X@GRAD")));

  std::map<std::string, std::vector<double>> pin{{"X", ampPositiveValues(20)}};
  std::vector<double> proj = randomValues(20);
  Forward root = [&](const std::map<std::string, std::vector<double>>& v) {
    return toDoubles(runAmpUnary("sqrt", fromDoubles(DType::Float64, s, v.at("X")), s));
  };
  OpRunner sg("sqrt_grad");
  sg.in("Out", {runAmpUnary("sqrt", fromDoubles(DType::Float64, s, pin["X"]), s)}).in("Out@GRAD", {fromDoubles(DType::Float64, s, proj)});
  sg.out("X@GRAD", {Tensor(DType::Float64, s)}).run();
  requireGradMatchesFD(root, pin, "X", proj, toDoubles(sg.result("X@GRAD")));
}

TEST_CASE("elementwise_max / elementwise_min (+ grads) match a reference and finite differences", "[kernels]") {
  struct Case {
    Dims x, y;
    int axis;
  };
  for (const Case& c : {Case{{3, 4}, {3, 4}, -1}, Case{{2, 3, 4}, {4}, -1}, Case{{2, 3, 4}, {3}, 1}})
    for (bool is_max : {true, false}) {
      CAPTURE(is_max, dimsJson(c.x), dimsJson(c.y));
      const char* type = is_max ? "elementwise_max" : "elementwise_min";
      // Y's element for output element i (X has the output's shape in these cases).
      auto y_at = [&](int64_t i) {
        int64_t inner = 1;
        size_t start = c.axis < 0 ? c.x.size() - c.y.size() : size_t(c.axis);
        for (size_t d = start + c.y.size(); d < c.x.size(); ++d) inner *= c.x[d];
        return (i / inner) % numel(c.y);
      };
      std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(c.x))}, {"Y", randomValues(numel(c.y))}};
      Forward fwd = [&](const std::map<std::string, std::vector<double>>& v) {
        OpRunner r(type);
        r.in("X", {fromDoubles(DType::Float64, c.x, v.at("X"))}).in("Y", {fromDoubles(DType::Float64, c.y, v.at("Y"))});
        r.out("Out", {Tensor(DType::Float64, c.x)}).attr("axis", std::to_string(c.axis)).run();
        return toDoubles(r.result("Out"));
      };
      std::vector<double> want;
      for (int64_t i = 0; i < numel(c.x); ++i) {
        double a = in["X"][size_t(i)], b = in["Y"][size_t(y_at(i))];
        want.push_back(is_max ? std::max(a, b) : std::min(a, b));
      }
      requireClose(fromDoubles(DType::Float64, c.x, fwd(in)), want, 1e-15);
      std::vector<double> proj = randomValues(numel(c.x));
      OpRunner g(is_max ? "elementwise_max_grad" : "elementwise_min_grad");
      g.in("X", {fromDoubles(DType::Float64, c.x, in["X"])}).in("Y", {fromDoubles(DType::Float64, c.y, in["Y"])});
      g.in("Out@GRAD", {fromDoubles(DType::Float64, c.x, proj)}).attr("axis", std::to_string(c.axis));
      g.out("X@GRAD", {Tensor(DType::Float64, c.x)}).out("Y@GRAD", {Tensor(DType::Float64, c.y)}).run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")));
      requireGradMatchesFD(fwd, in, "Y", proj, toDoubles(g.result("Y@GRAD")));
    }
}

TEST_CASE("elementwise_max_grad / min_grad give a tie to Y, as Paddle does", "[kernels]") {
  for (bool is_max : {true, false}) {
    OpRunner g(is_max ? "elementwise_max_grad" : "elementwise_min_grad");
    g.in("X", {fromDoubles(DType::Float32, {3}, {1, 2, 3})}).in("Y", {fromDoubles(DType::Float32, {3}, {1, 5, 0})});
    g.in("Out@GRAD", {fromDoubles(DType::Float32, {3}, {10, 20, 30})});
    g.out("X@GRAD", {Tensor(DType::Float32, {3})}).out("Y@GRAD", {Tensor(DType::Float32, {3})}).run();
    CHECK(toDoubles(g.result("X@GRAD")) == (is_max ? std::vector<double>{0, 0, 30} : std::vector<double>{0, 20, 0}));
    CHECK(toDoubles(g.result("Y@GRAD")) == (is_max ? std::vector<double>{10, 20, 0} : std::vector<double>{10, 0, 30}));
  }
}
