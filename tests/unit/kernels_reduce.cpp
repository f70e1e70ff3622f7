// reduce_sum, reduce_mean, mean (+ grads) and sum against float64 references and finite differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

struct RedCase {
  Dims x;
  Dims dim;
  bool keep, all;
};

const std::vector<RedCase>& reduceCases() {
  static const std::vector<RedCase> c{
      {{3, 4}, {0}, false, false},
      {{3, 4}, {1}, true, false},
      {{2, 3, 4}, {0, 2}, false, false},  // non-adjacent dims
      {{2, 3, 4}, {-1}, false, false},
      {{2, 3, 4}, {1}, true, false},
      {{2, 3, 4}, {0}, false, true},  // reduce_all wins over dim
      {{2, 3, 4}, {0, 1, 2}, true, false},
  };
  return c;
}

// Reference: sums every element into the output index with reduced coordinates dropped.
std::vector<double> refReduce(const RedCase& c, const std::vector<double>& x, bool mean, Dims* out_shape) {
  size_t r = c.x.size();
  std::vector<bool> red(r, c.all);
  for (int64_t d : c.dim) red[size_t(d < 0 ? d + int64_t(r) : d)] = true;
  out_shape->clear();
  Dims kept = c.x;
  int64_t count = 1;
  for (size_t d = 0; d < r; ++d) {
    if (red[d]) {
      kept[d] = 1;
      count *= c.x[d];
      if (c.keep) out_shape->push_back(1);
    } else {
      out_shape->push_back(c.x[d]);
    }
  }
  std::vector<double> out(size_t(numel(kept)), 0.0);
  for (int64_t i = 0; i < numel(c.x); ++i) {
    int64_t rem = i, off = 0, mul = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t k = rem % c.x[d];
      rem /= c.x[d];
      off += (red[d] ? 0 : k) * mul;
      mul *= kept[d];
    }
    out[size_t(off)] += x[size_t(i)];
  }
  if (mean)
    for (double& v : out) v /= double(count);
  return out;
}

Tensor runReduce(const char* type, const RedCase& c, const Tensor& x, const Dims& os) {
  OpRunner r(type);
  r.in("X", {x}).out("Out", {Tensor(x.dtype(), os)});
  r.attr("dim", dimsJson(c.dim)).attr("keep_dim", c.keep ? "true" : "false").attr("reduce_all", c.all ? "true" : "false");
  return r.run().result("Out");
}

}  // namespace

TEST_CASE("reduce_sum and reduce_mean match a float64 reference, grads match finite differences", "[kernels]") {
  for (bool mean : {false, true})
    for (const RedCase& c : reduceCases()) {
      CAPTURE(mean, dimsJson(c.x), dimsJson(c.dim), c.keep, c.all);
      const char* type = mean ? "reduce_mean" : "reduce_sum";
      Dims os;
      for (DType t : floatTypes()) {
        Tensor x = randomTensor(t, c.x);
        std::vector<double> want = refReduce(c, toDoubles(x), mean, &os);
        requireClose(runReduce(type, c, x, os), want, tolFor(t));
      }
      std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(c.x))}};
      std::vector<double> proj = randomValues(numel(os));
      Forward fwd = [&](const auto& v) { return toDoubles(runReduce(type, c, fromDoubles(DType::Float64, c.x, v.at("X")), os)); };
      for (DType t : floatTypes()) {
        OpRunner g(mean ? "reduce_mean_grad" : "reduce_sum_grad");
        g.in("X", {fromDoubles(t, c.x, in["X"])}).in("Out@GRAD", {fromDoubles(t, os, proj)}).out("X@GRAD", {Tensor(t, c.x)});
        g.attr("dim", dimsJson(c.dim)).attr("keep_dim", c.keep ? "true" : "false").attr("reduce_all", c.all ? "true" : "false");
        g.run();
        requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
      }
    }
}

TEST_CASE("reduce_sum accepts [1] for a full reduction and rejects a wrong Out", "[kernels]") {
  RedCase c{{2, 3}, {0, 1}, false, false};
  Tensor x = randomTensor(DType::Float64, c.x);
  Dims os;
  std::vector<double> want = refReduce(c, toDoubles(x), false, &os);
  REQUIRE(os.empty());
  requireClose(runReduce("reduce_sum", c, x, {1}), want, 1e-12);
  requireClose(runReduce("reduce_sum", c, x, {}), want, 1e-12);
  REQUIRE_THROWS_AS(runReduce("reduce_sum", c, x, {2}), spopt::rt::KernelError);
}

TEST_CASE("mean and mean_grad", "[kernels]") {
  for (DType t : floatTypes()) {
    Dims s{3, 5};
    Tensor x = randomTensor(t, s);
    double want = 0;
    for (double v : toDoubles(x)) want += v;
    want /= 15;
    OpRunner r("mean");
    r.in("X", {x}).out("Out", {Tensor(t, {1})}).run();
    requireClose(r.result("Out"), {want}, tolFor(t));
    std::map<std::string, std::vector<double>> in{{"X", toDoubles(x)}};
    std::vector<double> proj{0.7};
    Forward fwd = [&](const auto& v) {
      OpRunner f("mean");
      f.in("X", {fromDoubles(DType::Float64, s, v.at("X"))}).out("Out", {Tensor(DType::Float64, {})}).run();
      return toDoubles(f.result("Out"));
    };
    OpRunner g("mean_grad");
    g.in("X", {x}).in("Out@GRAD", {fromDoubles(t, {1}, proj)}).out("X@GRAD", {Tensor(t, s)}).run();
    requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), 1e-6);
  }
}

TEST_CASE("sum adds its inputs, also in place", "[kernels]") {
  for (DType t : floatTypes()) {
    Dims s{4, 5};
    Tensor a = randomTensor(t, s), b = randomTensor(t, s), c = randomTensor(t, s);
    std::vector<double> want = toDoubles(a), bv = toDoubles(b), cv = toDoubles(c);
    for (size_t i = 0; i < want.size(); ++i) want[i] += bv[i] + cv[i];
    OpRunner r("sum");
    r.in("X", {a, b, c}).out("Out", {Tensor(t, s)}).run();
    requireClose(r.result("Out"), want, tolFor(t));
    // Out aliasing X[0] (gradient accumulation in place).
    OpRunner inplace("sum");
    inplace.in("X", {a, b, c}).out("Out", {a}).run();
    requireClose(a, want, tolFor(t));
  }
  OpRunner bad("sum");
  bad.in("X", {Tensor(DType::Float32, {2}), Tensor(DType::Float32, {3})}).out("Out", {Tensor(DType::Float32, {2})});
  REQUIRE_THROWS_AS(bad.run(), spopt::rt::KernelError);
}
