// gelu, relu, scale, softmax (+ grads) against float64 formulas and finite differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

const std::vector<Dims>& shapes() {
  static const std::vector<Dims> s{{7}, {3, 5}, {2, 3, 4}};
  return s;
}

double refGelu(double x, bool approximate) {
  if (approximate) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

Tensor runUnary(const char* type, const Tensor& x, const std::vector<std::pair<std::string, std::string>>& attrs = {}) {
  OpRunner r(type);
  r.in("X", {x}).out("Out", {Tensor(x.dtype(), x.shape())});
  for (auto& [k, v] : attrs) r.attr(k, v);
  return r.run().result("Out");
}

// Softmax along `axis` of a row-major tensor, in float64.
std::vector<double> refSoftmax(const std::vector<double>& x, const Dims& s, int axis) {
  size_t a = size_t(axis < 0 ? axis + int(s.size()) : axis);
  int64_t outer = 1, inner = 1, len = s[a];
  for (size_t i = 0; i < a; ++i) outer *= s[i];
  for (size_t i = a + 1; i < s.size(); ++i) inner *= s[i];
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[size_t((o * len + k) * inner + i)]);
      for (int64_t k = 0; k < len; ++k) {
        size_t j = size_t((o * len + k) * inner + i);
        out[j] = std::exp(x[j]) / sum;
      }
    }
  return out;
}

}  // namespace

TEST_CASE("gelu matches erf and tanh formulas, gelu_grad matches finite differences", "[kernels]") {
  for (bool approx : {false, true})
    for (const Dims& s : shapes()) {
      CAPTURE(approx, dimsJson(s));
      std::vector<std::pair<std::string, std::string>> attrs{{"approximate", approx ? "true" : "false"}};
      for (DType t : floatTypes()) {
        Tensor x = randomTensor(t, s);
        std::vector<double> want;
        for (double v : toDoubles(x)) want.push_back(refGelu(v, approx));
        requireClose(runUnary("gelu", x, attrs), want, tolFor(t));
      }
      std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(s))}};
      std::vector<double> proj = randomValues(numel(s));
      Forward fwd = [&](const auto& v) { return toDoubles(runUnary("gelu", fromDoubles(DType::Float64, s, v.at("X")), attrs)); };
      for (DType t : floatTypes()) {
        OpRunner g("gelu_grad");
        g.in("X", {fromDoubles(t, s, in["X"])}).in("Out@GRAD", {fromDoubles(t, s, proj)});
        g.out("X@GRAD", {Tensor(t, s)}).attr("approximate", approx ? "true" : "false").run();
        requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
      }
    }
}

TEST_CASE("relu and relu_grad", "[kernels]") {
  for (const Dims& s : shapes())
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(s), spopt::dtypeName(t));
      Tensor x = randomTensor(t, s);
      std::vector<double> want;
      for (double v : toDoubles(x)) want.push_back(v > 0 ? v : 0);
      Tensor out = runUnary("relu", x);
      requireClose(out, want, 0);
      // relu_grad reads Out; finite differences of relu away from 0 (inputs are >= 0.1 in size).
      std::map<std::string, std::vector<double>> in{{"X", toDoubles(x)}};
      std::vector<double> proj = randomValues(numel(s));
      Forward fwd = [&](const auto& v) { return toDoubles(runUnary("relu", fromDoubles(DType::Float64, s, v.at("X")))); };
      OpRunner g("relu_grad");
      g.in("Out", {out}).in("Out@GRAD", {fromDoubles(t, s, proj)}).out("X@GRAD", {Tensor(t, s)}).run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), 1e-6);
    }
}

TEST_CASE("softmax along any axis, softmax_grad matches finite differences", "[kernels]") {
  struct Case {
    Dims s;
    int axis;
  };
  for (const Case& c : std::vector<Case>{{{3, 5}, -1}, {{2, 3, 4}, 1}, {{2, 3, 4}, 0}, {{6}, 0}}) {
    CAPTURE(dimsJson(c.s), c.axis);
    std::vector<std::pair<std::string, std::string>> attrs{{"axis", std::to_string(c.axis)}};
    for (DType t : floatTypes()) {
      Tensor x = randomTensor(t, c.s);
      requireClose(runUnary("softmax", x, attrs), refSoftmax(toDoubles(x), c.s, c.axis), tolFor(t));
    }
    std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(c.s))}};
    std::vector<double> proj = randomValues(numel(c.s));
    Forward fwd = [&](const auto& v) {
      return toDoubles(runUnary("softmax", fromDoubles(DType::Float64, c.s, v.at("X")), attrs));
    };
    for (DType t : floatTypes()) {
      Tensor out = runUnary("softmax", fromDoubles(t, c.s, in["X"]), attrs);
      OpRunner g("softmax_grad");
      g.in("Out", {out}).in("Out@GRAD", {fromDoubles(t, c.s, proj)}).out("X@GRAD", {Tensor(t, c.s)});
      g.attr("axis", std::to_string(c.axis)).run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
    }
  }
}

TEST_CASE("softmax is stable for large inputs", "[kernels]") {
  Tensor x = fromDoubles(DType::Float32, {3}, {1000.0, 1001.0, 1002.0});
  requireClose(runUnary("softmax", x), refSoftmax({0.0, 1.0, 2.0}, {3}, -1), 1e-6);
}

// float32 rows sum their exponentials in float32 lanes (as Paddle does): two sets of sixteen
// lanes, a tree over the lanes, a scalar tail. Each probability is within fastExp's error (5e-7,
// kernels_fast_math.cpp), the rounding of its lane's running sum (len / 32 adds), of the tree and
// of the scale; lengths around 16 and 32 cross every vector-and-tail boundary.
TEST_CASE("float32 softmax rows of any length stay within their float32 error bound of float64", "[kernels]") {
  for (int64_t len : {1, 15, 16, 17, 31, 32, 33, 47, 128, 1011, 32000}) {
    CAPTURE(len);
    Dims s{2, len};
    std::vector<double> v = randomValues(numel(s));
    for (double& x : v) x *= 8;  // exponentials over e^-16 .. e^16
    Tensor x = fromDoubles(DType::Float32, s, v);
    std::vector<double> got = toDoubles(runUnary("softmax", x)), want = refSoftmax(toDoubles(x), s, -1);
    const double u = 0x1p-24, bound = 5e-7 + (double(len) / 32 + 8) * u;
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i, got[i], want[i]);
      REQUIRE(std::fabs(got[i] - want[i]) <= bound * want[i]);
    }
  }
}

// A softmax along a middle axis (a strided row) takes its elements in the order of the
// contiguous row: the same bits as the transposed tensor's last-axis softmax.
TEST_CASE("a strided softmax row has the bits of the same row laid out contiguously", "[kernels]") {
  for (DType t : floatTypes())
    for (int64_t len : {33, 1011}) {
      CAPTURE(spopt::dtypeName(t), len);
      std::vector<double> v = randomValues(3 * len), vt(v.size());
      for (int64_t k = 0; k < len; ++k)
        for (int64_t c = 0; c < 3; ++c) vt[size_t(c * len + k)] = v[size_t(k * 3 + c)];
      std::vector<double> strided = toDoubles(runUnary("softmax", fromDoubles(t, {len, 3}, v), {{"axis", "0"}}));
      std::vector<double> contiguous = toDoubles(runUnary("softmax", fromDoubles(t, {3, len}, vt)));
      for (int64_t k = 0; k < len; ++k)
        for (int64_t c = 0; c < 3; ++c) REQUIRE(strided[size_t(k * 3 + c)] == contiguous[size_t(c * len + k)]);
    }
}

TEST_CASE("scale with bias before and after scaling", "[kernels]") {
  for (bool after : {true, false})
    for (DType t : {DType::Float32, DType::Float64, DType::Int64}) {
      CAPTURE(after, spopt::dtypeName(t));
      Dims s{4, 3};
      Tensor x = t == DType::Int64 ? fromDoubles(t, s, {1, -2, 3, 4, 5, -6, 7, 8, 9, 10, 11, -12}) : randomTensor(t, s);
      std::vector<double> want;
      for (double v : toDoubles(x)) want.push_back(after ? 3 * v + 2 : 3 * (v + 2));
      requireClose(runUnary("scale", x, {{"scale", "3.0"}, {"bias", "2"}, {"bias_after_scale", after ? "true" : "false"}}),
                   want, tolFor(t));
    }
}

TEST_CASE("scale takes its factor from ScaleTensor when present", "[kernels]") {
  Tensor x = randomTensor(DType::Float32, {5});
  OpRunner r("scale");
  r.in("X", {x}).in("ScaleTensor", {fromDoubles(DType::Float32, {1}, {-2.0})}).out("Out", {Tensor(DType::Float32, {5})});
  r.attr("scale", "3.0").attr("bias", "1.0").run();
  std::vector<double> want;
  for (double v : toDoubles(x)) want.push_back(-2 * v + 1);
  requireClose(r.result("Out"), want, 1e-6);
}
