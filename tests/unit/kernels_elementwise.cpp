// elementwise_add / elementwise_mul (+ grads) against an index-by-index float64 reference.
#include "kernel_harness.h"

using namespace kt;

namespace {

struct EwCase {
  Dims x, y;
  int axis;
};

const std::vector<EwCase>& elementwiseCases() {
  static const std::vector<EwCase> c{
      {{3, 4}, {3, 4}, -1},        // same shape
      {{2, 3, 8}, {8}, -1},        // bias over trailing dim
      {{2, 3, 4}, {3, 4}, -1},     // trailing dims
      {{2, 3, 4}, {3}, 1},         // Paddle axis: Y lines up with X's dim 1
      {{2, 3, 4}, {2, 3}, 0},      // axis 0
      {{2, 3, 4}, {2, 1, 4}, -1},  // size-1 dim broadcast
      {{2, 1, 4}, {3, 1}, -1},     // both operands broadcast
      {{5}, {2, 5}, -1},           // X shorter than Y
      {{2, 3}, {1}, -1},           // scalar-like Y
  };
  return c;
}

// Reference broadcast: aligned shapes and the out shape.
void align(const EwCase& c, Dims* xa, Dims* ya, Dims* out) {
  bool y_short = c.y.size() <= c.x.size();
  const Dims& lo = y_short ? c.x : c.y;
  const Dims& sh = y_short ? c.y : c.x;
  int64_t start = c.axis == -1 ? int64_t(lo.size() - sh.size()) : c.axis;
  Dims pad(lo.size(), 1);
  for (size_t i = 0; i < sh.size(); ++i) pad[size_t(start) + i] = sh[i];
  *xa = y_short ? lo : pad;
  *ya = y_short ? pad : lo;
  out->resize(lo.size());
  for (size_t i = 0; i < lo.size(); ++i) (*out)[i] = std::max((*xa)[i], (*ya)[i]);
}

int64_t offsetIn(const Dims& own, const Dims& out, int64_t flat) {
  int64_t off = 0, mul = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t i = flat % out[d];
    flat /= out[d];
    off += (own[d] == 1 ? 0 : i) * mul;
    mul *= own[d];
  }
  return off;
}

std::vector<double> refForward(bool mul, const EwCase& c, const std::vector<double>& x, const std::vector<double>& y,
                               Dims* out_shape) {
  Dims xa, ya;
  align(c, &xa, &ya, out_shape);
  std::vector<double> out(size_t(numel(*out_shape)));
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    double a = x[size_t(offsetIn(xa, *out_shape, i))], b = y[size_t(offsetIn(ya, *out_shape, i))];
    out[size_t(i)] = mul ? a * b : a + b;
  }
  return out;
}

Tensor runForward(const char* type, const Tensor& x, const Tensor& y, int axis, const Dims& os) {
  OpRunner r(type);
  r.in("X", {x}).in("Y", {y}).out("Out", {Tensor(x.dtype(), os)}).attr("axis", std::to_string(axis)).run();
  return r.result("Out");
}

}  // namespace

TEST_CASE("elementwise_add and elementwise_mul match a float64 reference", "[kernels]") {
  for (bool mul : {false, true})
    for (DType t : floatTypes())
      for (const EwCase& c : elementwiseCases()) {
        CAPTURE(mul, dimsJson(c.x), dimsJson(c.y), c.axis, spopt::dtypeName(t));
        Tensor x = randomTensor(t, c.x), y = randomTensor(t, c.y);
        Dims os;
        std::vector<double> want = refForward(mul, c, toDoubles(x), toDoubles(y), &os);
        requireClose(runForward(mul ? "elementwise_mul" : "elementwise_add", x, y, c.axis, os), want, tolFor(t));
      }
}

TEST_CASE("elementwise_add_grad and elementwise_mul_grad match finite differences", "[kernels]") {
  for (bool mul : {false, true})
    for (const EwCase& c : elementwiseCases()) {
      CAPTURE(mul, dimsJson(c.x), dimsJson(c.y), c.axis);
      const char* type = mul ? "elementwise_mul" : "elementwise_add";
      std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(c.x))}, {"Y", randomValues(numel(c.y))}};
      Dims os;
      refForward(mul, c, in["X"], in["Y"], &os);
      std::vector<double> proj = randomValues(numel(os));
      Forward fwd = [&](const std::map<std::string, std::vector<double>>& v) {
        return toDoubles(runForward(type, fromDoubles(DType::Float64, c.x, v.at("X")),
                                    fromDoubles(DType::Float64, c.y, v.at("Y")), c.axis, os));
      };
      auto grads = [&](DType t) {
        OpRunner g(mul ? "elementwise_mul_grad" : "elementwise_add_grad");
        g.in("X", {fromDoubles(t, c.x, in["X"])}).in("Y", {fromDoubles(t, c.y, in["Y"])});
        g.in("Out@GRAD", {fromDoubles(t, os, proj)}).attr("axis", std::to_string(c.axis));
        g.out("X@GRAD", {Tensor(t, c.x)}).out("Y@GRAD", {Tensor(t, c.y)}).run();
        return std::make_pair(g.result("X@GRAD"), g.result("Y@GRAD"));
      };
      auto [dx, dy] = grads(DType::Float64);
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(dx));
      requireGradMatchesFD(fwd, in, "Y", proj, toDoubles(dy));
      auto [dx32, dy32] = grads(DType::Float32);
      requireClose(dx32, toDoubles(dx), 1e-5);
      requireClose(dy32, toDoubles(dy), 1e-5);
    }
}

TEST_CASE("elementwise_add_grad sums a float32 bias gradient in double", "[kernels]") {
  // 100000 rows of 0.1f: a float accumulator drifts by ~1e-3 relative; double does not.
  int64_t rows = 100000;
  Tensor g = fromDoubles(DType::Float32, {rows, 2}, std::vector<double>(size_t(rows * 2), 0.1));
  OpRunner r("elementwise_add_grad");
  r.in("X", {Tensor(DType::Float32, {rows, 2})}).in("Y", {Tensor(DType::Float32, {2})}).in("Out@GRAD", {g});
  r.out("Y@GRAD", {Tensor(DType::Float32, {2})}).run();
  double want = double(rows) * double(0.1f);
  requireClose(r.result("Y@GRAD"), {want, want}, 1e-7);
}

TEST_CASE("elementwise ops reject shapes that do not broadcast", "[kernels]") {
  OpRunner r("elementwise_add");
  r.in("X", {Tensor(DType::Float32, {2, 3})}).in("Y", {Tensor(DType::Float32, {4})});
  r.out("Out", {Tensor(DType::Float32, {2, 3})});
  REQUIRE_THROWS_AS(r.run(), spopt::rt::KernelError);
  OpRunner o("elementwise_mul");
  o.in("X", {Tensor(DType::Float32, {2, 3})}).in("Y", {Tensor(DType::Float32, {3})});
  o.out("Out", {Tensor(DType::Float32, {3, 2})});
  REQUIRE_THROWS_AS(o.run(), spopt::rt::KernelError);
}

TEST_CASE("elementwise with axis drops Y's trailing 1s that do not fit, as Paddle does", "[kernels]") {
  Tensor x = randomTensor(DType::Float64, {2, 3});
  std::vector<double> yv = randomValues(3);
  OpRunner trimmed("elementwise_add");
  trimmed.in("X", {x}).in("Y", {fromDoubles(DType::Float64, {3, 1}, yv)}).out("Out", {Tensor(DType::Float64, {2, 3})});
  trimmed.attr("axis", "1").run();
  std::vector<double> xv = toDoubles(x), want(6);
  for (size_t i = 0; i < 6; ++i) want[i] = xv[i] + yv[i % 3];
  requireClose(trimmed.result("Out"), want, 1e-15);
}
