// reshape2, transpose2, split, concat (+ grads) against index-by-index references.
#include "kernel_harness.h"

using namespace kt;

namespace {

// out[i0..in] = x[idx permuted]: the reference transpose by unravelling each output index.
std::vector<double> refTranspose(const std::vector<double>& x, const Dims& s, const Dims& perm, Dims* out_shape) {
  out_shape->clear();
  for (int64_t p : perm) out_shape->push_back(s[size_t(p)]);
  std::vector<double> out(x.size());
  Dims in_strides(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * s[d];
  for (int64_t o = 0; o < int64_t(out.size()); ++o) {
    int64_t rem = o, off = 0;
    for (size_t d = perm.size(); d-- > 0;) {
      int64_t i = rem % (*out_shape)[d];
      rem /= (*out_shape)[d];
      off += i * in_strides[size_t(perm[d])];
    }
    out[size_t(o)] = x[size_t(off)];
  }
  return out;
}

Dims withZero(const Dims& s) {
  Dims x{0};
  x.insert(x.end(), s.begin(), s.end());
  return x;
}

}  // namespace

TEST_CASE("reshape2 copies dims for 0, infers -1, and fills XShape's shape", "[kernels]") {
  for (DType t : {DType::Float32, DType::Float64, DType::Int64}) {
    CAPTURE(spopt::dtypeName(t));
    Tensor x = fromDoubles(t, {2, 3, 4}, sequence(24));
    OpRunner r("reshape2");
    r.in("X", {x}).out("Out", {Tensor(t, {2, 4, 3})}).out("XShape", {Tensor(t, {0, 2, 3, 4})});
    r.attr("shape", "[0,-1,3]").run();
    requireClose(r.result("Out"), toDoubles(x), 0);
    OpRunner g("reshape2_grad");
    g.in("XShape", {Tensor(t, {0, 2, 3, 4})}).in("Out@GRAD", {r.result("Out")}).out("X@GRAD", {Tensor(t, {2, 3, 4})}).run();
    requireClose(g.result("X@GRAD"), toDoubles(x), 0);
  }
  OpRunner bad("reshape2");
  bad.in("X", {Tensor(DType::Float32, {2, 3})}).out("Out", {Tensor(DType::Float32, {4, 2})}).attr("shape", "[4,-1]");
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("cannot infer the -1"));
  OpRunner wrong("reshape2");
  wrong.in("X", {Tensor(DType::Float32, {2, 3})}).out("Out", {Tensor(DType::Float32, {6})}).attr("shape", "[3,2]");
  REQUIRE_THROWS_AS(wrong.run(), spopt::rt::KernelError);
}

TEST_CASE("transpose2 and transpose2_grad against a reference permutation", "[kernels]") {
  struct Case {
    Dims s, perm;
  };
  for (const Case& c : std::vector<Case>{{{3, 4}, {1, 0}},
                                         {{2, 3, 4}, {0, 2, 1}},
                                         {{2, 3, 4, 5}, {0, 2, 1, 3}},  // keeps the inner dim: block copies
                                         {{2, 3, 4, 5}, {3, 1, 0, 2}},
                                         {{2, 1, 4}, {2, 1, 0}},
                                         {{2, 3, 4}, {0, 1, 2}}})
    for (DType t : {DType::Float32, DType::Float64, DType::Int64}) {
      CAPTURE(dimsJson(c.s), dimsJson(c.perm), spopt::dtypeName(t));
      Tensor x = t == DType::Int64 ? fromDoubles(t, c.s, sequence(numel(c.s))) : randomTensor(t, c.s);
      Dims os;
      std::vector<double> want = refTranspose(toDoubles(x), c.s, c.perm, &os);
      OpRunner r("transpose2");
      r.in("X", {x}).out("Out", {Tensor(t, os)}).out("XShape", {Tensor(t, withZero(c.s))}).attr("axis", dimsJson(c.perm)).run();
      requireClose(r.result("Out"), want, 0);
      // The grad of a permutation is the inverse permutation: dX recovers X from dOut = Out.
      OpRunner g("transpose2_grad");
      g.in("XShape", {Tensor(t, withZero(c.s))}).in("Out@GRAD", {r.result("Out")}).out("X@GRAD", {Tensor(t, c.s)});
      g.attr("axis", dimsJson(c.perm)).run();
      requireClose(g.result("X@GRAD"), toDoubles(x), 0);
    }
  OpRunner bad("transpose2");
  bad.in("X", {Tensor(DType::Float32, {2, 3})}).out("Out", {Tensor(DType::Float32, {3, 2})}).attr("axis", "[0,0]");
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("no permutation"));
}

TEST_CASE("split by num and by sections, then concat joins the parts back", "[kernels]") {
  struct Case {
    Dims s;
    int axis;
    int num;
    Dims sections;
  };
  for (const Case& c : std::vector<Case>{{{4, 6}, 0, 2, {}},
                                         {{4, 6}, 1, 3, {}},
                                         {{2, 6, 3}, -2, 0, {1, -1, 2}},
                                         {{2, 5, 3}, 2, 0, {2, 1}},
                                         {{7}, 0, 0, {3, 4}}})
    for (DType t : {DType::Float32, DType::Float64, DType::Int64}) {
      CAPTURE(dimsJson(c.s), c.axis, c.num, dimsJson(c.sections), spopt::dtypeName(t));
      size_t a = size_t(c.axis < 0 ? c.axis + int(c.s.size()) : c.axis);
      Dims sizes = c.sections;
      if (c.num) sizes.assign(size_t(c.num), c.s[a] / c.num);
      int64_t known = 0;
      for (int64_t v : sizes) known += v > 0 ? v : 0;
      for (int64_t& v : sizes) if (v == -1) v = c.s[a] - known;
      Tensor x = t == DType::Int64 ? fromDoubles(t, c.s, sequence(numel(c.s))) : randomTensor(t, c.s);
      std::vector<Tensor> outs;
      for (int64_t v : sizes) {
        Dims os = c.s;
        os[a] = v;
        outs.emplace_back(t, os);
      }
      OpRunner r("split");
      r.in("X", {x}).out("Out", outs).attr("axis", std::to_string(c.axis)).attr("num", std::to_string(c.num));
      if (!c.sections.empty()) r.attr("sections", dimsJson(c.sections));
      r.run();
      // Reference: element (o, k, i) of X lands in the part holding k.
      std::vector<double> xv = toDoubles(x);
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < a; ++d) outer *= c.s[d];
      for (size_t d = a + 1; d < c.s.size(); ++d) inner *= c.s[d];
      int64_t start = 0;
      for (size_t p = 0; p < sizes.size(); ++p) {
        std::vector<double> want;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t k = start; k < start + sizes[p]; ++k)
            for (int64_t i = 0; i < inner; ++i) want.push_back(xv[size_t((o * c.s[a] + k) * inner + i)]);
        requireClose(r.result("Out", p), want, 0);
        start += sizes[p];
      }
      OpRunner j("concat");
      std::vector<Tensor> parts;
      for (size_t p = 0; p < sizes.size(); ++p) parts.push_back(r.result("Out", p));
      j.in("X", parts).out("Out", {Tensor(t, c.s)}).attr("axis", std::to_string(c.axis)).run();
      requireClose(j.result("Out"), xv, 0);
    }
  OpRunner bad("split");
  bad.in("X", {Tensor(DType::Float32, {5, 2})}).out("Out", {Tensor(DType::Float32, {2, 2}), Tensor(DType::Float32, {3, 2})});
  bad.attr("axis", "0").attr("num", "2");
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("does not split into 2 equal parts"));
  OpRunner cat("concat");
  cat.in("X", {Tensor(DType::Float32, {2, 2}), Tensor(DType::Float32, {2, 3})}).out("Out", {Tensor(DType::Float32, {4, 2})});
  cat.attr("axis", "0");
  REQUIRE_THROWS_WITH(cat.run(), Catch::Contains("differ outside axis 0"));
}

TEST_CASE("transpose2_grad and reshape2_grad match finite differences of their forwards", "[kernels]") {
  Dims s{2, 3, 4}, perm{2, 0, 1}, ts{4, 2, 3}, rs{6, 4};
  std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(s))}};
  for (bool transpose : {true, false}) {
    CAPTURE(transpose);
    const Dims& os = transpose ? ts : rs;
    std::vector<double> proj = randomValues(numel(os));
    auto forward = [&](DType t, const std::vector<double>& x) {
      OpRunner r(transpose ? "transpose2" : "reshape2");
      r.in("X", {fromDoubles(t, s, x)}).out("Out", {Tensor(t, os)}).out("XShape", {Tensor(t, withZero(s))});
      if (transpose) r.attr("axis", dimsJson(perm));
      else r.attr("shape", "[6,-1]");
      return r.run().result("Out");
    };
    Forward fwd = [&](const auto& v) { return toDoubles(forward(DType::Float64, v.at("X"))); };
    for (DType t : floatTypes()) {
      OpRunner g(transpose ? "transpose2_grad" : "reshape2_grad");
      g.in("XShape", {Tensor(t, withZero(s))}).in("Out@GRAD", {fromDoubles(t, os, proj)}).out("X@GRAD", {Tensor(t, s)});
      if (transpose) g.attr("axis", dimsJson(perm));
      g.run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
    }
  }
}
