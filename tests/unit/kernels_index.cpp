// tril_triu / tril / triu, where, full_like, gather_nd, squeeze2, slice, stack, expand_v2 (+ the
// grads) against references written here by index arithmetic, the grads against finite differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

using Vec = std::vector<double>;

// Row-major multi-index of flat index i in dims d.
Dims unravel(int64_t i, const Dims& d) {
  Dims idx(d.size());
  for (size_t k = d.size(); k-- > 0;) {
    idx[k] = i % d[k];
    i /= d[k];
  }
  return idx;
}
int64_t ravel(const Dims& idx, const Dims& d) {
  int64_t i = 0;
  for (size_t k = 0; k < d.size(); ++k) i = i * d[k] + idx[k];
  return i;
}

Tensor runOne(std::string_view type, std::vector<std::pair<std::string, Tensor>> ins, const std::string& out_slot, Tensor out,
              const std::vector<std::pair<std::string, std::string>>& attrs) {
  OpRunner r(type);
  for (auto& [slot, t] : ins) r.in(slot, {t});
  r.out(out_slot, {out});
  for (auto& [k, v] : attrs) r.attr(k, v);
  return r.run().result(out_slot);
}

}  // namespace

TEST_CASE("tril_triu, tril and triu keep one triangle of the last two dims", "[kernels]") {
  Dims s{2, 3, 5};
  for (int diag : {-1, 0, 2})
    for (bool lower : {true, false})
      for (DType t : {DType::Float32, DType::Float64, DType::Int64, DType::Bool}) {
        CAPTURE(diag, lower, spopt::dtypeName(t));
        Tensor x = fromDoubles(t, s, t == DType::Bool ? Vec(size_t(numel(s)), 1.0) : sequence(numel(s)));
        Vec xs = toDoubles(x), want(xs.size());
        for (int64_t i = 0; i < numel(s); ++i) {
          Dims idx = unravel(i, s);
          int64_t d = idx[2] - idx[1];
          want[size_t(i)] = (lower ? d <= diag : d >= diag) ? xs[size_t(i)] : 0.0;
        }
        std::vector<std::pair<std::string, std::string>> attrs{{"diagonal", std::to_string(diag)}};
        requireClose(runOne(lower ? "pd_op.tril" : "pd_op.triu", {{"X", x}}, "Out", Tensor(t, s), attrs), want, 0);
        attrs.push_back({"lower", lower ? "true" : "false"});
        requireClose(runOne("tril_triu", {{"X", x}}, "Out", Tensor(t, s), attrs), want, 0);
      }
}

TEST_CASE("where selects by Condition, where_grad routes Out@GRAD and matches finite differences", "[kernels]") {
  Dims s{3, 4};
  Vec cond;
  for (int64_t i = 0; i < numel(s); ++i) cond.push_back(double((i * 5) % 3 == 0));
  Tensor c = fromDoubles(DType::Bool, s, cond);
  std::map<std::string, Vec> in{{"X", randomValues(numel(s))}, {"Y", randomValues(numel(s))}};
  auto forward = [&](DType t, const std::map<std::string, Vec>& v) {
    return runOne("where", {{"Condition", c}, {"X", fromDoubles(t, s, v.at("X"))}, {"Y", fromDoubles(t, s, v.at("Y"))}}, "Out", Tensor(t, s), {});
  };
  Vec want;
  for (size_t i = 0; i < cond.size(); ++i) want.push_back(cond[i] ? in["X"][i] : in["Y"][i]);
  for (DType t : floatTypes()) requireClose(forward(t, in), want, tolFor(t));
  Vec proj = randomValues(numel(s));
  Forward fwd = [&](const auto& v) { return toDoubles(forward(DType::Float64, v)); };
  for (DType t : floatTypes()) {
    OpRunner g("where_grad");
    g.in("Condition", {c}).in("X", {Tensor(t, s)}).in("Y", {Tensor(t, s)}).in("Out@GRAD", {fromDoubles(t, s, proj)});
    g.out("X@GRAD", {Tensor(t, s)}).out("Y@GRAD", {Tensor(t, s)}).run();
    requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), 1e-6);
    requireGradMatchesFD(fwd, in, "Y", proj, toDoubles(g.result("Y@GRAD")), 1e-6);
  }
  OpRunner bad("where");
  bad.in("Condition", {Tensor(DType::Float32, s)}).in("X", {Tensor(DType::Float32, s)}).in("Y", {Tensor(DType::Float32, s)});
  bad.out("Out", {Tensor(DType::Float32, s)});
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("Condition is not a bool tensor"));
}

TEST_CASE("full_like fills Out with value in Out's dtype", "[kernels]") {
  for (DType t : {DType::Float32, DType::Float64, DType::Int64}) {
    Tensor got = runOne("fill_any_like", {{"X", Tensor(DType::Float32, {2, 3})}}, "Out", Tensor(t, {2, 3}), {{"value", "-3.0"}});
    requireClose(got, Vec(6, -3.0), 0);
  }
  REQUIRE_THROWS_WITH(runOne("fill_any_like", {{"X", Tensor(DType::Float32, {2, 3})}}, "Out", Tensor(DType::Float32, {3, 2}), {}),
                      Catch::Contains("Out [3,2]"));
}

TEST_CASE("gather_nd picks blocks by index tuples, gather_nd_grad sums them back", "[kernels]") {
  Dims xs{3, 4, 2};
  // k = 2: four (i, j) tuples, one repeated, each naming a block of 2.
  Vec idx{0, 1, 2, 3, 0, 1, 1, 0};
  Dims is{4, 2}, os{4, 2};
  Tensor index = fromDoubles(DType::Int64, is, idx);
  std::map<std::string, Vec> in{{"X", randomValues(numel(xs))}};
  auto forward = [&](DType t, const std::map<std::string, Vec>& v) {
    return runOne("gather_nd", {{"X", fromDoubles(t, xs, v.at("X"))}, {"Index", index}}, "Out", Tensor(t, os), {});
  };
  Vec want;
  for (int64_t tup = 0; tup < 4; ++tup)
    for (int64_t j = 0; j < 2; ++j) want.push_back(in["X"][size_t(ravel({int64_t(idx[size_t(2 * tup)]), int64_t(idx[size_t(2 * tup + 1)]), j}, xs))]);
  for (DType t : floatTypes()) requireClose(forward(t, in), want, tolFor(t));
  Vec proj = randomValues(numel(os));
  Forward fwd = [&](const auto& v) { return toDoubles(forward(DType::Float64, v)); };
  for (DType t : floatTypes()) {
    Tensor dx = runOne("gather_nd_grad", {{"X", Tensor(t, xs)}, {"Index", index}, {"Out@GRAD", fromDoubles(t, os, proj)}}, "X@GRAD", Tensor(t, xs), {});
    requireGradMatchesFD(fwd, in, "X", proj, toDoubles(dx), 1e-6);
  }
  REQUIRE_THROWS_WITH(runOne("gather_nd", {{"X", Tensor(DType::Float32, xs)}, {"Index", fromDoubles(DType::Int64, {1, 2}, {3, 0})}}, "Out",
                             Tensor(DType::Float32, {1, 2}), {}),
                      Catch::Contains("Index holds 3 for dim 0"));
}

TEST_CASE("squeeze2 drops size-1 dims, squeeze2_grad restores X's dims (from XShape, x or an xshape operand)", "[kernels]") {
  struct Case {
    Dims x, axes, out;
  };
  for (const Case& c : {Case{{1, 3, 1, 2}, {}, {3, 2}}, Case{{1, 3, 1, 2}, {-2}, {1, 3, 2}}, Case{{1, 3, 1, 2}, {0, 1}, {3, 1, 2}}}) {
    CAPTURE(dimsJson(c.x), dimsJson(c.axes));
    Tensor x = randomTensor(DType::Float32, c.x);
    Tensor out = runOne("squeeze2", {{"X", x}}, "Out", Tensor(DType::Float32, c.out), {{"axes", dimsJson(c.axes)}});
    requireClose(out, toDoubles(x), 0);
    Dims xshape = c.x;
    xshape.insert(xshape.begin(), 0);
    Tensor dx = runOne("squeeze2_grad", {{"XShape", Tensor::shapeOnly(DType::Float32, xshape)}, {"Out@GRAD", out}}, "X@GRAD",
                       Tensor(DType::Float32, c.x), {{"axes", dimsJson(c.axes)}});
    requireClose(dx, toDoubles(x), 0);
    // PIR's operand 0: x itself (Paddle 3), or the xshape value (earlier PIR programs).
    for (const Dims& in0 : {c.x, xshape}) {
      Tensor pir_dx = runOne("squeeze2_grad", {{"X", Tensor::shapeOnly(DType::Float32, in0)}, {"Out@GRAD", out}}, "X@GRAD",
                             Tensor(DType::Float32, c.x), {{"axes", dimsJson(c.axes)}});
      requireClose(pir_dx, toDoubles(x), 0);
    }
  }
  REQUIRE_THROWS_WITH(runOne("squeeze2_grad", {{"X", Tensor::shapeOnly(DType::Float32, {3, 2})}, {"Out@GRAD", Tensor(DType::Float32, {3, 2})}},
                             "X@GRAD", Tensor(DType::Float32, {1, 3, 2}), {}),
                      Catch::Contains("X@GRAD [1,3,2] should be [3,2] (X's dims)"));
  REQUIRE_THROWS_WITH(runOne("squeeze2", {{"X", Tensor(DType::Float32, {1, 3})}}, "Out", Tensor(DType::Float32, {3}), {{"axes", "[2]"}}),
                      Catch::Contains("axis 2 is out of range"));
}

TEST_CASE("slice takes the box of starts/ends (clamped, negative from the end), slice_grad scatters it back", "[kernels]") {
  struct Case {
    Dims x, axes, starts, ends, decrease, out;
  };
  for (const Case& c : {Case{{4, 5, 3}, {1}, {1}, {4}, {}, {4, 3, 3}}, Case{{4, 5, 3}, {0, 2}, {-3, 1}, {100, 2}, {2}, {3, 5}},
                        Case{{4, 5}, {0, 1}, {2, -1}, {3, 5}, {0, 1}, {1}}}) {
    CAPTURE(dimsJson(c.x), dimsJson(c.axes), dimsJson(c.starts), dimsJson(c.ends));
    std::vector<std::pair<std::string, std::string>> attrs{{"axes", dimsJson(c.axes)}, {"starts", dimsJson(c.starts)},
                                                           {"ends", dimsJson(c.ends)}, {"decrease_axis", dimsJson(c.decrease)}};
    // The box, from the bounds clamped by hand.
    Dims lo(c.x.size(), 0), hi = c.x;
    for (size_t i = 0; i < c.axes.size(); ++i) {
      size_t a = size_t(c.axes[i] < 0 ? c.axes[i] + int64_t(c.x.size()) : c.axes[i]);
      auto clamp = [&](int64_t v) { return std::min(std::max(v < 0 ? v + c.x[a] : v, int64_t(0)), c.x[a]); };
      lo[a] = clamp(c.starts[i]);
      hi[a] = clamp(c.ends[i]);
    }
    std::map<std::string, Vec> in{{"Input", randomValues(numel(c.x))}};
    Vec want;
    for (int64_t i = 0; i < numel(c.x); ++i) {
      Dims idx = unravel(i, c.x);
      bool inside = true;
      for (size_t d = 0; d < idx.size(); ++d) inside &= idx[d] >= lo[d] && idx[d] < hi[d];
      if (inside) want.push_back(in["Input"][size_t(i)]);
    }
    auto forward = [&](DType t, const std::map<std::string, Vec>& v) {
      return runOne("slice", {{"Input", fromDoubles(t, c.x, v.at("Input"))}}, "Out", Tensor(t, c.out), attrs);
    };
    for (DType t : floatTypes()) requireClose(forward(t, in), want, tolFor(t));
    Vec proj = randomValues(numel(c.out));
    Forward fwd = [&](const auto& v) { return toDoubles(forward(DType::Float64, v)); };
    for (DType t : floatTypes()) {
      Tensor dx = runOne("slice_grad", {{"Input", Tensor(t, c.x)}, {"Out@GRAD", fromDoubles(t, c.out, proj)}}, "Input@GRAD", Tensor(t, c.x), attrs);
      requireGradMatchesFD(fwd, in, "Input", proj, toDoubles(dx), 1e-6);
    }
  }
}

TEST_CASE("stack joins parts along a new axis, stack_grad splits Y@GRAD back", "[kernels]") {
  Dims part{2, 3};
  for (int axis : {0, 1, -1}) {
    CAPTURE(axis);
    size_t a = size_t(axis < 0 ? axis + 3 : axis);
    Dims ys = part;
    ys.insert(ys.begin() + int64_t(a), 3);
    std::vector<Vec> parts{randomValues(6), randomValues(6), randomValues(6)};
    Vec want(size_t(numel(ys)));
    for (int64_t i = 0; i < numel(ys); ++i) {
      Dims idx = unravel(i, ys);
      int64_t which = idx[a];
      idx.erase(idx.begin() + int64_t(a));
      want[size_t(i)] = parts[size_t(which)][size_t(ravel(idx, part))];
    }
    for (DType t : floatTypes()) {
      OpRunner r("stack");
      r.in("X", {fromDoubles(t, part, parts[0]), fromDoubles(t, part, parts[1]), fromDoubles(t, part, parts[2])});
      r.out("Y", {Tensor(t, ys)}).attr("axis", std::to_string(axis)).run();
      requireClose(r.result("Y"), want, tolFor(t));
      OpRunner g("stack_grad");
      g.in("Y@GRAD", {r.result("Y")}).out("X@GRAD", {Tensor(t, part), Tensor(t, part), Tensor(t, part)});
      g.attr("axis", std::to_string(axis)).run();
      for (size_t i = 0; i < 3; ++i) requireClose(g.result("X@GRAD", i), parts[i], tolFor(t));
    }
  }
}

TEST_CASE("expand_v2 repeats size-1 and new leading dims, expand_v2_grad sums them back", "[kernels]") {
  struct Case {
    Dims x, shape, out;
  };
  for (const Case& c : {Case{{3, 1}, {2, 3, 4}, {2, 3, 4}}, Case{{1, 4}, {-1, 4}, {1, 4}}, Case{{2, 1, 3}, {2, 5, -1}, {2, 5, 3}}}) {
    CAPTURE(dimsJson(c.x), dimsJson(c.shape));
    std::vector<std::pair<std::string, std::string>> attrs{{"shape", dimsJson(c.shape)}};
    std::map<std::string, Vec> in{{"X", randomValues(numel(c.x))}};
    Vec want;
    size_t lead = c.out.size() - c.x.size();
    for (int64_t i = 0; i < numel(c.out); ++i) {
      Dims idx = unravel(i, c.out), src;
      for (size_t d = lead; d < idx.size(); ++d) src.push_back(c.x[d - lead] == 1 ? 0 : idx[d]);
      want.push_back(in["X"][size_t(ravel(src, c.x))]);
    }
    auto forward = [&](DType t, const std::map<std::string, Vec>& v) {
      return runOne("expand_v2", {{"X", fromDoubles(t, c.x, v.at("X"))}}, "Out", Tensor(t, c.out), attrs);
    };
    for (DType t : floatTypes()) requireClose(forward(t, in), want, tolFor(t));
    Vec proj = randomValues(numel(c.out));
    Forward fwd = [&](const auto& v) { return toDoubles(forward(DType::Float64, v)); };
    for (DType t : floatTypes()) {
      Tensor dx = runOne("expand_v2_grad", {{"X", Tensor(t, c.x)}, {"Out@GRAD", fromDoubles(t, c.out, proj)}}, "X@GRAD", Tensor(t, c.x), attrs);
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(dx), t == DType::Float64 ? 1e-6 : 1e-4);
    }
  }
  REQUIRE_THROWS_WITH(runOne("expand_v2", {{"X", Tensor(DType::Float32, {3, 2})}}, "Out", Tensor(DType::Float32, {3, 4}), {{"shape", "[3,4]"}}),
                      Catch::Contains("does not expand to shape [3,4]"));
}
