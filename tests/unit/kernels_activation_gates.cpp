// sigmoid, hardsigmoid, hardswish (+ grads) against float64 formulas and finite differences, with
// Paddle's defaults and the attributes PP-OCRv5 writes.
#include "kernel_harness.h"

using namespace kt;

namespace {

using Attrs = std::vector<std::pair<std::string, std::string>>;

Tensor runGate(const char* type, const Tensor& x, const Attrs& attrs = {}) {
  OpRunner r(type);
  r.in("X", {x}).out("Out", {Tensor(x.dtype(), x.shape())});
  for (auto& [k, v] : attrs) r.attr(k, v);
  return r.run().result("Out");
}

// Values spread over [-4, 4] (times `spread`): across every kink of the hard functions, none on one.
std::vector<double> spreadValues(int64_t n, double spread = 4.0) {
  std::vector<double> v = randomValues(n);
  for (double& x : v) x *= spread;
  return v;
}

double refSigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double refHardSigmoid(double x, double slope, double offset) { return std::min(std::max(slope * x + offset, 0.0), 1.0); }
double refHardSwish(double x, double threshold, double scale, double offset) {
  return x * std::min(std::max(x + offset, 0.0), threshold) / scale;
}

struct Gate {
  const char* op;
  const char* grad;
  const char* grad_reads;  // X or Out
  Attrs attrs;
  std::function<double(double)> ref;
};

std::vector<Gate> gates() {
  return {
      {"sigmoid", "sigmoid_grad", "Out", {}, refSigmoid},
      {"hard_sigmoid", "hard_sigmoid_grad", "Out", {}, [](double x) { return refHardSigmoid(x, 0.2, 0.5); }},
      {"hard_sigmoid", "hard_sigmoid_grad", "Out", {{"slope", "0.1666667014360428"}, {"offset", "0.5"}},
       [](double x) { return refHardSigmoid(x, 0.1666667014360428, 0.5); }},
      {"hard_swish", "hard_swish_grad", "X", {}, [](double x) { return refHardSwish(x, 6, 6, 3); }},
      // threshold = scale: above the ramp Paddle's grad (1) is the derivative (threshold / scale);
      // the case where they differ is below, by hand.
      {"hard_swish", "hard_swish_grad", "X", {{"threshold", "4.0"}, {"scale", "4.0"}, {"offset", "1.5"}},
       [](double x) { return refHardSwish(x, 4, 4, 1.5); }},
  };
}

}  // namespace

TEST_CASE("sigmoid, hardsigmoid and hardswish match float64 formulas, their grads finite differences", "[kernels]") {
  for (const Gate& gate : gates())
    for (const Dims& s : std::vector<Dims>{{7}, {2, 3, 4, 5}}) {
      CAPTURE(gate.op, gate.attrs.size(), dimsJson(s));
      for (DType t : floatTypes()) {
        Tensor x = fromDoubles(t, s, spreadValues(numel(s)));
        std::vector<double> want;
        for (double v : toDoubles(x)) want.push_back(gate.ref(v));
        requireClose(runGate(gate.op, x, gate.attrs), want, tolFor(t));
      }
      std::map<std::string, std::vector<double>> in{{"X", spreadValues(numel(s))}};
      std::vector<double> proj = randomValues(numel(s));
      Forward fwd = [&](const auto& v) { return toDoubles(runGate(gate.op, fromDoubles(DType::Float64, s, v.at("X")), gate.attrs)); };
      for (DType t : floatTypes()) {
        Tensor x = fromDoubles(t, s, in["X"]);
        OpRunner g(gate.grad);
        g.in(gate.grad_reads, {std::string(gate.grad_reads) == "X" ? x : runGate(gate.op, x, gate.attrs)});
        g.in("Out@GRAD", {fromDoubles(t, s, proj)}).out("X@GRAD", {Tensor(t, s)});
        for (auto& [k, v] : gate.attrs) g.attr(k, v);
        g.run();
        requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
      }
    }
}

TEST_CASE("the gates saturate as Paddle's functors do, and keep NaN", "[kernels]") {
  Tensor x = fromDoubles(DType::Float32, {5}, {-100.0, -3.0, 0.0, 3.0, 100.0});
  requireClose(runGate("sigmoid", x), {0.0, refSigmoid(-3), 0.5, refSigmoid(3), 1.0}, 1e-6);
  requireClose(runGate("hard_sigmoid", x), {0.0, 0.0, 0.5, 1.0, 1.0}, 0);
  requireClose(runGate("hard_swish", x), {0.0, 0.0, 0.0, 3.0, 100.0}, 0);
  // Above the ramp hardswish_grad passes dOut through whole (Paddle's 1, not threshold / scale).
  OpRunner g("hard_swish_grad");
  g.in("X", {fromDoubles(DType::Float64, {3}, {-5.0, 1.0, 5.0})}).in("Out@GRAD", {fromDoubles(DType::Float64, {3}, {2.0, 2.0, 2.0})});
  g.out("X@GRAD", {Tensor(DType::Float64, {3})}).attr("threshold", "6.0").attr("scale", "12.0").attr("offset", "3.0").run();
  requireClose(g.result("X@GRAD"), {0.0, 2.0 * 5.0 / 12.0, 2.0}, 1e-15);
  Tensor nan = fromDoubles(DType::Float32, {1}, {std::nan("")});
  for (const char* op : {"sigmoid", "hard_sigmoid", "pd_op.hardswish"}) {
    CAPTURE(op);
    CHECK(std::isnan(toDoubles(runGate(op, nan))[0]));
  }
}

TEST_CASE("hardswish refuses scale 0", "[kernels]") {
  CHECK_THROWS_WITH(runGate("hard_swish", randomTensor(DType::Float32, {3}), {{"scale", "0"}}),
                    Catch::Contains("scale 0 would divide by zero"));
}
