// rms_norm, silu, swiglu, fused_rotary_position_embedding (+ grads) against float64 references
// written here from the ops' definitions, and the grads against finite differences.
#include "kernel_harness.h"

using namespace kt;

namespace {

using Vec = std::vector<double>;

double sigmoidRef(double v) { return 1 / (1 + std::exp(-v)); }

// ---- rms_norm ----

struct RmsCase {
  Dims x;
  int begin;
  bool weight, bias;
};

const std::vector<RmsCase>& rmsCases() {
  static const std::vector<RmsCase> c{{{4, 6}, 1, true, false}, {{2, 3, 8}, 2, true, true}, {{2, 3, 4}, 1, true, false},
                                      {{3, 5}, -1, false, false}, {{2, 2, 6}, -1, true, true}};
  return c;
}

std::pair<int64_t, int64_t> rowsCols(const RmsCase& c) {
  int b = c.begin < 0 ? c.begin + int(c.x.size()) : c.begin;
  int64_t rows = 1;
  for (int i = 0; i < b; ++i) rows *= c.x[size_t(i)];
  return {rows, numel(c.x) / rows};
}

Vec refRms(const RmsCase& c, const Vec& x, const Vec& w, const Vec& b, Vec* inv) {
  auto [rows, cols] = rowsCols(c);
  Vec y(x.size());
  inv->assign(size_t(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < cols; ++j) ss += x[size_t(r * cols + j)] * x[size_t(r * cols + j)];
    double rms = std::sqrt(ss / double(cols) + 1e-6);
    (*inv)[size_t(r)] = 1 / rms;
    for (int64_t j = 0; j < cols; ++j)
      y[size_t(r * cols + j)] = x[size_t(r * cols + j)] / rms * (c.weight ? w[size_t(j)] : 1.0) + (c.bias ? b[size_t(j)] : 0.0);
  }
  return y;
}

struct RmsOut {
  Tensor y, inv;
};
RmsOut runRms(const RmsCase& c, DType t, const Vec& x, const Vec& w, const Vec& b) {
  auto [rows, cols] = rowsCols(c);
  OpRunner r("rms_norm");
  r.in("x", {fromDoubles(t, c.x, x)});
  if (c.weight) r.in("norm_weight", {fromDoubles(t, {cols}, w)});
  if (c.bias) r.in("norm_bias", {fromDoubles(t, {cols}, b)});
  r.out("out", {Tensor(t, c.x)}).out("inv_var", {Tensor(DType::Float32, {rows})});
  r.attr("begin_norm_axis", std::to_string(c.begin)).attr("epsilon", "1e-6").run();
  return {r.result("out"), r.result("inv_var")};
}

// ---- rotary embedding ----

struct RopeCase {
  int64_t batch, seq, heads, kheads, dim;
  bool neox, positions, time_major, four_d, with_v;
};

const std::vector<RopeCase>& ropeCases() {
  static const std::vector<RopeCase> c{
      {2, 3, 2, 2, 4, false, false, false, false, false},  // Llama: halves paired, no ids
      {2, 3, 2, 1, 6, false, true, false, true, false},    // position ids, [1,seq,1,d] tables, fewer k heads
      {1, 4, 1, 1, 4, true, false, false, true, true},     // neighbours paired, with v
      {2, 3, 2, 2, 4, true, true, true, false, false},     // time major with ids
  };
  return c;
}

Dims qkvShape(const RopeCase& c, int64_t heads) {
  return c.time_major ? Dims{c.seq, c.batch, heads, c.dim} : Dims{c.batch, c.seq, heads, c.dim};
}
int64_t tableRows(const RopeCase& c) { return c.positions ? c.seq + 3 : c.seq; }
Dims tableShape(const RopeCase& c) { return c.four_d ? Dims{1, tableRows(c), 1, c.dim} : Dims{tableRows(c), c.dim}; }
std::vector<double> positions(const RopeCase& c) {
  Vec p;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < c.seq; ++s) p.push_back(double((s * 2 + b * 3 + 1) % tableRows(c)));
  return p;
}

// Paddle's definition: out = x * cos + rot(x) * sin, rot pairing neighbours (-x[2i+1], x[2i]) or
// halves (-x2, x1); the table row is position_ids[b, s], else s.
Vec refRope(const RopeCase& c, int64_t heads, const Vec& x, const Vec& sin, const Vec& cos) {
  Vec out(x.size());
  Vec pos = positions(c);
  int64_t h2 = c.dim / 2;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t s = 0; s < c.seq; ++s)
      for (int64_t h = 0; h < heads; ++h) {
        int64_t base = (c.time_major ? (s * c.batch + b) : (b * c.seq + s)) * heads * c.dim + h * c.dim;
        int64_t row = c.positions ? int64_t(pos[size_t(b * c.seq + s)]) : s;
        Vec v(x.begin() + base, x.begin() + base + c.dim), rot(size_t(c.dim));
        for (int64_t i = 0; i < h2; ++i) {
          if (c.neox) {
            rot[size_t(2 * i)] = -v[size_t(2 * i + 1)];
            rot[size_t(2 * i + 1)] = v[size_t(2 * i)];
          } else {
            rot[size_t(i)] = -v[size_t(i + h2)];
            rot[size_t(i + h2)] = v[size_t(i)];
          }
        }
        for (int64_t j = 0; j < c.dim; ++j)
          out[size_t(base + j)] = v[size_t(j)] * cos[size_t(row * c.dim + j)] + rot[size_t(j)] * sin[size_t(row * c.dim + j)];
      }
  return out;
}

void ropeAttrs(OpRunner& r, const RopeCase& c) {
  r.attr("use_neox_rotary_style", c.neox ? "true" : "false").attr("time_major", c.time_major ? "true" : "false");
}

void ropeTables(OpRunner& r, const RopeCase& c, DType t, const Vec& sin, const Vec& cos) {
  r.in("sin", {fromDoubles(t, tableShape(c), sin)}).in("cos", {fromDoubles(t, tableShape(c), cos)});
  if (c.positions) r.in("position_ids", {fromDoubles(DType::Int64, {c.batch, c.seq}, positions(c))});
}

}  // namespace

TEST_CASE("rms_norm matches a float64 reference", "[kernels]") {
  for (const RmsCase& c : rmsCases())
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(c.x), c.begin, c.weight, c.bias, spopt::dtypeName(t));
      auto [rows, cols] = rowsCols(c);
      Vec x = toDoubles(randomTensor(t, c.x)), w = toDoubles(randomTensor(t, {cols})), b = toDoubles(randomTensor(t, {cols})), inv;
      Vec want = refRms(c, x, w, b, &inv);
      RmsOut got = runRms(c, t, x, w, b);
      requireClose(got.y, want, tolFor(t));
      requireClose(got.inv, inv, 1e-6);  // inv_var is float32 here, as Paddle keeps it
    }
}

TEST_CASE("rms_norm_grad matches finite differences for x, norm_weight and norm_bias", "[kernels]") {
  for (const RmsCase& c : rmsCases()) {
    CAPTURE(dimsJson(c.x), c.begin, c.weight, c.bias);
    auto [rows, cols] = rowsCols(c);
    std::map<std::string, Vec> in{{"x", randomValues(numel(c.x))}, {"w", randomValues(cols)}, {"b", randomValues(cols)}};
    Vec proj = randomValues(numel(c.x));
    Forward fwd = [&](const auto& v) { return toDoubles(runRms(c, DType::Float64, v.at("x"), v.at("w"), v.at("b")).y); };
    for (DType t : floatTypes()) {
      OpRunner f("rms_norm");
      f.in("x", {fromDoubles(t, c.x, in["x"])});
      if (c.weight) f.in("norm_weight", {fromDoubles(t, {cols}, in["w"])});
      f.out("out", {Tensor(t, c.x)}).out("inv_var", {Tensor(t, {rows})}).attr("begin_norm_axis", std::to_string(c.begin)).attr("epsilon", "1e-6").run();
      OpRunner g("rms_norm_grad");
      g.in("x", {fromDoubles(t, c.x, in["x"])}).in("inv_var", {f.result("inv_var")}).in("out@GRAD", {fromDoubles(t, c.x, proj)});
      if (c.weight) g.in("norm_weight", {fromDoubles(t, {cols}, in["w"])}).out("norm_weight@GRAD", {Tensor(t, {cols})});
      if (c.bias) g.out("norm_bias@GRAD", {Tensor(t, {cols})});
      g.out("x@GRAD", {Tensor(t, c.x)}).attr("begin_norm_axis", std::to_string(c.begin)).attr("epsilon", "1e-6").run();
      double tol = t == DType::Float64 ? 1e-6 : 1e-4;
      requireGradMatchesFD(fwd, in, "x", proj, toDoubles(g.result("x@GRAD")), tol);
      if (c.weight) requireGradMatchesFD(fwd, in, "w", proj, toDoubles(g.result("norm_weight@GRAD")), tol);
      if (c.bias) requireGradMatchesFD(fwd, in, "b", proj, toDoubles(g.result("norm_bias@GRAD")), tol);
    }
  }
}

TEST_CASE("rms_norm refuses the fused pre-add and a wrong norm_weight", "[kernels]") {
  OpRunner r("rms_norm");
  r.in("x", {randomTensor(DType::Float32, {2, 4})}).in("residual", {randomTensor(DType::Float32, {2, 4})});
  r.out("out", {Tensor(DType::Float32, {2, 4})}).attr("begin_norm_axis", "1");
  REQUIRE_THROWS_WITH(r.run(), Catch::Contains("bias and residual") && Catch::Contains("not supported"));
  OpRunner w("rms_norm");
  w.in("x", {randomTensor(DType::Float32, {2, 4})}).in("norm_weight", {randomTensor(DType::Float32, {3})});
  w.out("out", {Tensor(DType::Float32, {2, 4})}).attr("begin_norm_axis", "1");
  REQUIRE_THROWS_WITH(w.run(), Catch::Contains("norm_weight [3] should hold 4 values"));
}

TEST_CASE("silu matches x sigmoid(x), silu_grad matches finite differences", "[kernels]") {
  for (const Dims& s : {Dims{7}, Dims{3, 5}}) {
    CAPTURE(dimsJson(s));
    for (DType t : floatTypes()) {
      Tensor x = randomTensor(t, s);
      Vec want;
      for (double v : toDoubles(x)) want.push_back(v * sigmoidRef(v));
      OpRunner r("silu");
      requireClose(r.in("X", {x}).out("Out", {Tensor(t, s)}).run().result("Out"), want, tolFor(t));
    }
    std::map<std::string, Vec> in{{"X", randomValues(numel(s))}};
    Vec proj = randomValues(numel(s));
    Forward fwd = [&](const auto& v) {
      OpRunner r("silu");
      return toDoubles(r.in("X", {fromDoubles(DType::Float64, s, v.at("X"))}).out("Out", {Tensor(DType::Float64, s)}).run().result("Out"));
    };
    for (DType t : floatTypes()) {
      OpRunner g("silu_grad");
      g.in("X", {fromDoubles(t, s, in["X"])}).in("Out@GRAD", {fromDoubles(t, s, proj)}).out("X@GRAD", {Tensor(t, s)}).run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-4);
    }
  }
}

TEST_CASE("swiglu matches silu(x) * y with and without y, swiglu_grad matches finite differences", "[kernels]") {
  for (bool split : {false, true}) {
    Dims xs = split ? Dims{2, 3, 8} : Dims{2, 3, 4}, os = {2, 3, 4};
    CAPTURE(split);
    auto forward = [&](DType t, const Vec& x, const Vec& y) {
      OpRunner r("swiglu");
      r.in("x", {fromDoubles(t, xs, x)});
      if (!split) r.in("y", {fromDoubles(t, os, y)});
      return r.out("out", {Tensor(t, os)}).run().result("out");
    };
    std::map<std::string, Vec> in{{"x", randomValues(numel(xs))}, {"y", randomValues(numel(os))}};
    Vec want;
    for (int64_t r = 0; r < 6; ++r)
      for (int64_t j = 0; j < 4; ++j) {
        double a = split ? in["x"][size_t(r * 8 + j)] : in["x"][size_t(r * 4 + j)];
        double b = split ? in["x"][size_t(r * 8 + 4 + j)] : in["y"][size_t(r * 4 + j)];
        want.push_back(a * sigmoidRef(a) * b);
      }
    for (DType t : floatTypes()) requireClose(forward(t, in["x"], in["y"]), want, t == DType::Float64 ? 1e-12 : 1e-5);
    Vec proj = randomValues(numel(os));
    Forward fwd = [&](const auto& v) { return toDoubles(forward(DType::Float64, v.at("x"), v.at("y"))); };
    for (DType t : floatTypes()) {
      OpRunner g("swiglu_grad");
      g.in("x", {fromDoubles(t, xs, in["x"])}).in("out@GRAD", {fromDoubles(t, os, proj)}).out("x@GRAD", {Tensor(t, xs)});
      if (!split) g.in("y", {fromDoubles(t, os, in["y"])}).out("y@GRAD", {Tensor(t, os)});
      g.run();
      double tol = t == DType::Float64 ? 1e-6 : 1e-4;
      requireGradMatchesFD(fwd, in, "x", proj, toDoubles(g.result("x@GRAD")), tol);
      if (!split) requireGradMatchesFD(fwd, in, "y", proj, toDoubles(g.result("y@GRAD")), tol);
    }
  }
}

TEST_CASE("fused_rotary_position_embedding matches Paddle's rotation, its grad finite differences", "[kernels]") {
  for (const RopeCase& c : ropeCases()) {
    CAPTURE(c.neox, c.positions, c.time_major, c.four_d, c.with_v, c.kheads);
    Dims qs = qkvShape(c, c.heads), ks = qkvShape(c, c.kheads), ts = tableShape(c);
    // Tables with distinct sin values in each pair: the grad must be the exact transpose.
    Vec sin = randomValues(numel(ts)), cos = randomValues(numel(ts));
    std::map<std::string, Vec> in{{"q", randomValues(numel(qs))}, {"k", randomValues(numel(ks))}, {"v", randomValues(numel(qs))}};
    auto forward = [&](DType t, const std::map<std::string, Vec>& v) {
      OpRunner r("fused_rotary_position_embedding");
      r.in("q", {fromDoubles(t, qs, v.at("q"))}).in("k", {fromDoubles(t, ks, v.at("k"))});
      r.out("out_q", {Tensor(t, qs)}).out("out_k", {Tensor(t, ks)});
      if (c.with_v) r.in("v", {fromDoubles(t, qs, v.at("v"))}).out("out_v", {Tensor(t, qs)});
      ropeTables(r, c, t, sin, cos);
      ropeAttrs(r, c);
      r.run();
      return std::vector<Tensor>{r.result("out_q"), r.result("out_k"), c.with_v ? r.result("out_v") : Tensor()};
    };
    for (DType t : floatTypes()) {
      auto got = forward(t, in);
      requireClose(got[0], refRope(c, c.heads, in["q"], sin, cos), tolFor(t));
      requireClose(got[1], refRope(c, c.kheads, in["k"], sin, cos), tolFor(t));
      if (c.with_v) requireClose(got[2], refRope(c, c.heads, in["v"], sin, cos), tolFor(t));
    }
    Vec pq = randomValues(numel(qs)), pk = randomValues(numel(ks));
    // One scalar loss over both results: dot(pq, out_q) + dot(pk, out_k).
    Forward fwd = [&](const auto& v) {
      auto o = forward(DType::Float64, v);
      Vec all = toDoubles(o[0]), ok = toDoubles(o[1]);
      all.insert(all.end(), ok.begin(), ok.end());
      return all;
    };
    Vec proj = pq;
    proj.insert(proj.end(), pk.begin(), pk.end());
    for (DType t : floatTypes()) {
      OpRunner g("fused_rotary_position_embedding_grad");
      g.in("out_q@GRAD", {fromDoubles(t, qs, pq)}).in("out_k@GRAD", {fromDoubles(t, ks, pk)});
      g.out("q@GRAD", {Tensor(t, qs)}).out("k@GRAD", {Tensor(t, ks)});
      ropeTables(g, c, t, sin, cos);
      ropeAttrs(g, c);
      g.run();
      double tol = t == DType::Float64 ? 1e-6 : 1e-4;
      requireGradMatchesFD(fwd, in, "q", proj, toDoubles(g.result("q@GRAD")), tol);
      requireGradMatchesFD(fwd, in, "k", proj, toDoubles(g.result("k@GRAD")), tol);
    }
  }
}

TEST_CASE("fused_rotary_position_embedding refuses what it does not compute", "[kernels]") {
  RopeCase c{1, 3, 1, 1, 4, false, true, false, false, false};
  auto base = [&](OpRunner& r) {
    r.in("q", {randomTensor(DType::Float32, qkvShape(c, 1))}).out("out_q", {Tensor(DType::Float32, qkvShape(c, 1))});
  };
  OpRunner no_tables("fused_rotary_position_embedding");
  base(no_tables);
  REQUIRE_THROWS_WITH(no_tables.run(), Catch::Contains("needs sin and cos"));
  OpRunner far("fused_rotary_position_embedding");
  base(far);
  far.in("sin", {randomTensor(DType::Float32, {3, 4})}).in("cos", {randomTensor(DType::Float32, {3, 4})});
  far.in("position_ids", {fromDoubles(DType::Int64, {1, 3}, {0, 1, 3})});
  REQUIRE_THROWS_WITH(far.run(), Catch::Contains("position_ids holds 3, outside the 3 rows"));
  OpRunner odd("fused_rotary_position_embedding");
  odd.in("q", {randomTensor(DType::Float32, {1, 3, 1, 3})}).out("out_q", {Tensor(DType::Float32, {1, 3, 1, 3})});
  odd.in("sin", {randomTensor(DType::Float32, {3, 3})}).in("cos", {randomTensor(DType::Float32, {3, 3})});
  REQUIRE_THROWS_WITH(odd.run(), Catch::Contains("even head_dim"));
}
