// lookup_table_v2, Paddle 1.x's matmul, elementwise_div, softmax_with_cross_entropy, adam,
// unsqueeze2 and coalesce_tensor against float64 references and finite differences.
#include <cmath>

#include "kernel_harness.h"

using namespace kt;

namespace {

// Finite differences of a float64 reference against the kernel's gradient in dtype t.
double fdTol(DType t) { return t == DType::Float64 ? 1e-6 : 1e-5; }

Tensor ids(const Dims& shape, const std::vector<double>& v) { return fromDoubles(DType::Int64, shape, v); }

std::vector<double> refLookup(const std::vector<double>& w, int64_t width, const std::vector<double>& id, int64_t padding) {
  std::vector<double> out;
  for (double d : id)
    for (int64_t j = 0; j < width; ++j) out.push_back(int64_t(d) == padding ? 0.0 : w[size_t(int64_t(d) * width + j)]);
  return out;
}

}  // namespace

TEST_CASE("lookup_table_v2 gathers rows, zeros the padding row and scatters its gradient", "[kernels]") {
  const int64_t rows = 5, width = 3;
  const std::vector<double> id = {1, 4, 1, 2, 0, 1};
  for (int64_t padding : {int64_t(-1), int64_t(2)})
    for (DType t : floatTypes()) {
      CAPTURE(padding, spopt::dtypeName(t));
      std::vector<double> w = toDoubles(randomTensor(t, {rows, width}));
      OpRunner f("lookup_table_v2");
      f.in("Ids", {ids({2, 3}, id)}).in("W", {fromDoubles(t, {rows, width}, w)}).out("Out", {Tensor(t, {2, 3, width})});
      f.attr("padding_idx", std::to_string(padding)).run();
      requireClose(f.result("Out"), refLookup(w, width, id, padding), 0);

      std::vector<double> g = toDoubles(randomTensor(t, {2, 3, width}));
      OpRunner b("lookup_table_v2_grad");
      b.in("Ids", {ids({2, 3}, id)}).in("W", {fromDoubles(t, {rows, width}, w)}).in("Out@GRAD", {fromDoubles(t, {2, 3, width}, g)});
      b.out("W@GRAD", {Tensor(t, {rows, width})}).attr("padding_idx", std::to_string(padding)).run();
      Forward fwd = [&](const std::map<std::string, std::vector<double>>& in) { return refLookup(in.at("W"), width, id, padding); };
      requireGradMatchesFD(fwd, {{"W", w}}, "W", g, toDoubles(b.result("W@GRAD")), fdTol(t));
      if (padding >= 0)
        for (int64_t j = 0; j < width; ++j) CHECK(toDoubles(b.result("W@GRAD"))[size_t(padding * width + j)] == 0.0);
    }
}

TEST_CASE("lookup_table_v2 refuses an id outside the table", "[kernels]") {
  OpRunner f("lookup_table_v2");
  f.in("Ids", {ids({2}, {0, 5})}).in("W", {randomTensor(DType::Float32, {5, 2})}).out("Out", {Tensor(DType::Float32, {2, 2})});
  REQUIRE_THROWS_WITH(f.run(), Catch::Contains("Ids[1] = 5 is outside W's 5 rows"));
}

namespace {

// Batched alpha * X * Y^T over [b, m, k] x [b, n, k].
std::vector<double> refMatmulNT(const std::vector<double>& x, const std::vector<double>& y, int64_t b, int64_t m, int64_t n,
                                int64_t k, double alpha) {
  std::vector<double> out(size_t(b * m * n), 0.0);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = 0;
        for (int64_t j = 0; j < k; ++j) s += x[size_t((i * m + r) * k + j)] * y[size_t((i * n + c) * k + j)];
        out[size_t((i * m + r) * n + c)] = alpha * s;
      }
  return out;
}

}  // namespace

TEST_CASE("matmul (Paddle 1.x) scales a batched product by alpha: its gradient matches finite differences", "[kernels]") {
  const int64_t b = 2, m = 3, n = 4, k = 5;
  for (DType t : floatTypes()) {
    CAPTURE(spopt::dtypeName(t));
    std::vector<double> x = toDoubles(randomTensor(t, {b, m, k})), y = toDoubles(randomTensor(t, {b, n, k}));
    auto attrs = [](OpRunner& r) { r.attr("transpose_X", "false").attr("transpose_Y", "true").attr("alpha", "0.125"); };
    OpRunner f("matmul");
    f.in("X", {fromDoubles(t, {b, m, k}, x)}).in("Y", {fromDoubles(t, {b, n, k}, y)}).out("Out", {Tensor(t, {b, m, n})});
    attrs(f);
    f.run();
    requireClose(f.result("Out"), refMatmulNT(x, y, b, m, n, k, 0.125), tolFor(t));

    std::vector<double> g = toDoubles(randomTensor(t, {b, m, n}));
    OpRunner r("matmul_grad");
    r.in("X", {fromDoubles(t, {b, m, k}, x)}).in("Y", {fromDoubles(t, {b, n, k}, y)}).in("Out@GRAD", {fromDoubles(t, {b, m, n}, g)});
    r.out("X@GRAD", {Tensor(t, {b, m, k})}).out("Y@GRAD", {Tensor(t, {b, n, k})});
    attrs(r);
    r.run();
    Forward fwd = [&](const std::map<std::string, std::vector<double>>& in) { return refMatmulNT(in.at("X"), in.at("Y"), b, m, n, k, 0.125); };
    requireGradMatchesFD(fwd, {{"X", x}, {"Y", y}}, "X", g, toDoubles(r.result("X@GRAD")), fdTol(t));
    requireGradMatchesFD(fwd, {{"X", x}, {"Y", y}}, "Y", g, toDoubles(r.result("Y@GRAD")), fdTol(t));
  }
}

TEST_CASE("elementwise_div broadcasts Y by axis: its gradients match finite differences", "[kernels]") {
  // X [2,3,4] / Y [3] at axis 1, and X [1] / Y [1] (the GPT loss: a sum over a sum).
  struct Case {
    Dims x, y;
    int axis;
  };
  for (const Case& cs : {Case{{2, 3, 4}, {3}, 1}, Case{{1}, {1}, -1}, Case{{2, 3}, {2, 3}, -1}})
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(cs.x), dimsJson(cs.y), spopt::dtypeName(t));
      std::vector<double> x = toDoubles(randomTensor(t, cs.x)), y = toDoubles(randomTensor(t, cs.y));
      int64_t inner = cs.axis == 1 ? cs.x[2] : 1, ny = numel(cs.y);
      auto ref = [&](const std::vector<double>& xv, const std::vector<double>& yv) {
        std::vector<double> out(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) out[i] = xv[i] / yv[size_t((int64_t(i) / inner) % ny)];
        return out;
      };
      OpRunner f("elementwise_div");
      f.in("X", {fromDoubles(t, cs.x, x)}).in("Y", {fromDoubles(t, cs.y, y)}).out("Out", {Tensor(t, cs.x)});
      f.attr("axis", std::to_string(cs.axis)).run();
      requireClose(f.result("Out"), ref(x, y), tolFor(t));

      std::vector<double> g = toDoubles(randomTensor(t, cs.x));
      OpRunner r("elementwise_div_grad");
      r.in("X", {fromDoubles(t, cs.x, x)}).in("Y", {fromDoubles(t, cs.y, y)}).in("Out", {f.result("Out")});
      r.in("Out@GRAD", {fromDoubles(t, cs.x, g)}).out("X@GRAD", {Tensor(t, cs.x)}).out("Y@GRAD", {Tensor(t, cs.y)});
      r.attr("axis", std::to_string(cs.axis)).run();
      Forward fwd = [&](const std::map<std::string, std::vector<double>>& in) { return ref(in.at("X"), in.at("Y")); };
      requireGradMatchesFD(fwd, {{"X", x}, {"Y", y}}, "X", g, toDoubles(r.result("X@GRAD")), fdTol(t));
      requireGradMatchesFD(fwd, {{"X", x}, {"Y", y}}, "Y", g, toDoubles(r.result("Y@GRAD")), fdTol(t));
    }
}

namespace {

// Loss per row of [rows, classes] logits: logsumexp - x[label], 0 for the ignored label.
std::vector<double> refCrossEntropy(const std::vector<double>& x, const std::vector<double>& label, int64_t classes, int64_t ignore) {
  std::vector<double> loss;
  for (size_t r = 0; r < label.size(); ++r) {
    if (int64_t(label[r]) == ignore) {
      loss.push_back(0);
      continue;
    }
    double mx = -INFINITY, s = 0;
    for (int64_t k = 0; k < classes; ++k) mx = std::max(mx, x[r * size_t(classes) + size_t(k)]);
    for (int64_t k = 0; k < classes; ++k) s += std::exp(x[r * size_t(classes) + size_t(k)] - mx);
    loss.push_back(std::log(s) + mx - x[r * size_t(classes) + size_t(label[r])]);
  }
  return loss;
}

}  // namespace

TEST_CASE("softmax_with_cross_entropy is stable for large logits, honours ignore_index: its gradient matches finite differences",
          "[kernels]") {
  const int64_t classes = 6, ignore = -100;
  const std::vector<double> label = {2, 5, -100, 0};
  for (DType t : floatTypes()) {
    CAPTURE(spopt::dtypeName(t));
    std::vector<double> x = toDoubles(randomTensor(t, {2, 2, classes}));
    x[1] = 200;  // exp(200) overflows float32: the max shift keeps it finite
    auto run = [&](const std::vector<double>& xv) {
      OpRunner f("softmax_with_cross_entropy");
      f.in("Logits", {fromDoubles(t, {2, 2, classes}, xv)}).in("Label", {ids({2, 2, 1}, label)});
      f.out("Softmax", {Tensor(t, {2, 2, classes})}).out("Loss", {Tensor(t, {2, 2, 1})});
      f.attr("axis", "-1").attr("ignore_index", std::to_string(ignore)).attr("soft_label", "false").run();
      return std::pair{f.result("Softmax"), f.result("Loss")};
    };
    auto [softmax, loss] = run(x);
    requireClose(loss, refCrossEntropy(x, label, classes, ignore), tolFor(t) * 10);
    for (double v : toDoubles(softmax)) REQUIRE(std::isfinite(v));

    std::vector<double> g = toDoubles(randomTensor(t, {2, 2, 1}));
    OpRunner r("softmax_with_cross_entropy_grad");
    r.in("Label", {ids({2, 2, 1}, label)}).in("Softmax", {softmax}).in("Loss@GRAD", {fromDoubles(t, {2, 2, 1}, g)});
    r.out("Logits@GRAD", {Tensor(t, {2, 2, classes})}).attr("axis", "-1").attr("ignore_index", std::to_string(ignore)).run();
    std::vector<double> dx = toDoubles(r.result("Logits@GRAD"));
    for (int64_t k = 0; k < classes; ++k) CHECK(dx[size_t(2 * classes + k)] == 0.0);  // the ignored row
    x[1] = 0.5;  // finite differences of a float64 reference need no huge logit
    Forward fwd = [&](const std::map<std::string, std::vector<double>>& in) { return refCrossEntropy(in.at("X"), label, classes, ignore); };
    r.io.ins["Softmax"] = {run(x).first};
    r.run();
    requireGradMatchesFD(fwd, {{"X", x}}, "X", g, toDoubles(r.result("Logits@GRAD")), fdTol(t));
  }
}

TEST_CASE("adam follows Paddle's update formula and advances the decay powers", "[kernels]") {
  for (DType t : floatTypes()) {
    CAPTURE(spopt::dtypeName(t));
    const Dims s{3, 2};
    std::vector<double> p = toDoubles(randomTensor(t, s)), g = toDoubles(randomTensor(t, s)), m1 = toDoubles(randomTensor(t, s));
    std::vector<double> m2 = toDoubles(randomTensor(t, s));
    for (double& v : m2) v = std::fabs(v);
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, pow1 = 0.81, pow2 = 0.998;
    OpRunner r("adam");
    r.in("Param", {fromDoubles(t, s, p)}).in("Grad", {fromDoubles(t, s, g)}).in("Moment1", {fromDoubles(t, s, m1)});
    r.in("Moment2", {fromDoubles(t, s, m2)}).in("LearningRate", {fromDoubles(t, {1}, {lr})});
    r.in("Beta1Pow", {fromDoubles(t, {1}, {pow1})}).in("Beta2Pow", {fromDoubles(t, {1}, {pow2})});
    r.out("ParamOut", {Tensor(t, s)}).out("Moment1Out", {Tensor(t, s)}).out("Moment2Out", {Tensor(t, s)});
    r.out("Beta1PowOut", {Tensor(t, {1})}).out("Beta2PowOut", {Tensor(t, {1})});
    r.attr("beta1", "0.9").attr("beta2", "0.999").attr("epsilon", "1e-8").run();
    std::vector<double> want_p, want_m1, want_m2;
    double lr_t = lr * std::sqrt(1 - pow2) / (1 - pow1);
    for (size_t i = 0; i < p.size(); ++i) {
      double a = b1 * m1[i] + (1 - b1) * g[i], b = b2 * m2[i] + (1 - b2) * g[i] * g[i];
      want_m1.push_back(a);
      want_m2.push_back(b);
      want_p.push_back(p[i] - lr_t * a / (std::sqrt(b) + eps * std::sqrt(1 - pow2)));
    }
    requireClose(r.result("ParamOut"), want_p, tolFor(t));
    requireClose(r.result("Moment1Out"), want_m1, tolFor(t));
    requireClose(r.result("Moment2Out"), want_m2, tolFor(t));
    requireClose(r.result("Beta1PowOut"), {b1 * pow1}, tolFor(t));
    requireClose(r.result("Beta2PowOut"), {b2 * pow2}, tolFor(t));
  }
}

TEST_CASE("unsqueeze2 inserts ones at its axes and records X's shape", "[kernels]") {
  std::vector<double> x = sequence(6);
  OpRunner r("unsqueeze2");
  r.in("X", {ids({2, 3}, x)}).out("Out", {Tensor(DType::Int64, {2, 3, 1})}).out("XShape", {Tensor(DType::Int64, {0, 2, 3})});
  r.attr("axes", "[2]").run();
  requireClose(r.result("Out"), x, 0);
  OpRunner bad("unsqueeze2");
  bad.in("X", {ids({2, 3}, x)}).out("Out", {Tensor(DType::Int64, {2, 3, 1})}).attr("axes", "[4]");
  REQUIRE_THROWS_WITH(bad.run(), Catch::Contains("out of range"));
}

TEST_CASE("coalesce_tensor copies, sets or zeroes its outputs and concatenates them when FusedOutput has room", "[kernels]") {
  Tensor a = fromDoubles(DType::Float32, {2}, {1, 2}), b = fromDoubles(DType::Float32, {3}, {3, 4, 5});
  auto run = [&](const char* copy, const char* set, int64_t fused) {
    OpRunner r("coalesce_tensor");
    r.in("Input", {a, b}).out("Output", {Tensor(DType::Float32, {2}), Tensor(DType::Float32, {3})});
    r.out("FusedOutput", {Tensor(DType::Float32, {fused})}).attr("copy_data", copy).attr("set_constant", set).attr("constant", "7");
    r.run();
    return std::vector<std::vector<double>>{toDoubles(r.result("Output", 0)), toDoubles(r.result("Output", 1)),
                                            toDoubles(r.result("FusedOutput"))};
  };
  auto copied = run("true", "false", 6);
  CHECK(copied[0] == std::vector<double>{1, 2});
  CHECK(copied[2] == std::vector<double>{1, 2, 3, 4, 5, 0});
  auto set = run("false", "true", 0);
  CHECK(set[1] == std::vector<double>{7, 7, 7});
  CHECK(set[2].empty());
  CHECK(run("false", "false", 5)[2] == std::vector<double>{0, 0, 0, 0, 0});
}

// The class axis in the middle (a strided softmax row) and a wide one (the vectorised row over
// several lane blocks): Softmax and Loss against a float64 reference computed here.
TEST_CASE("softmax_with_cross_entropy's Softmax and Loss match a float64 reference along a middle axis and a wide last one",
          "[kernels]") {
  struct Case {
    Dims shape;
    int axis;
  };
  for (Case cs : {Case{{2, 7, 3}, 1}, Case{{3, 1000}, -1}}) {
    for (DType t : floatTypes()) {
      CAPTURE(spopt::dtypeName(t), cs.axis);
      const size_t ax = size_t(cs.axis < 0 ? int(cs.shape.size()) + cs.axis : cs.axis);
      int64_t outer = 1, inner = 1, classes = cs.shape[ax];
      for (size_t i = 0; i < ax; ++i) outer *= cs.shape[i];
      for (size_t i = ax + 1; i < cs.shape.size(); ++i) inner *= cs.shape[i];
      Dims reduced = cs.shape;
      reduced[ax] = 1;
      std::vector<double> x = toDoubles(randomTensor(t, cs.shape));
      for (double& v : x) v *= 8;  // logits of a few units: exponentials over a wide range
      std::vector<double> label(size_t(outer * inner));
      for (size_t i = 0; i < label.size(); ++i) label[i] = double((i * 5 + 3) % size_t(classes));
      OpRunner f("softmax_with_cross_entropy");
      f.in("Logits", {fromDoubles(t, cs.shape, x)}).in("Label", {ids(reduced, label)});
      f.out("Softmax", {Tensor(t, cs.shape)}).out("Loss", {Tensor(t, reduced)});
      f.attr("axis", std::to_string(cs.axis)).attr("soft_label", "false").run();
      std::vector<double> sm(x.size()), loss(label.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          auto at = [&](int64_t k) { return size_t((o * classes + k) * inner + in); };
          double mx = x[at(0)], sum = 0;
          for (int64_t k = 1; k < classes; ++k) mx = std::max(mx, x[at(k)]);
          for (int64_t k = 0; k < classes; ++k) sum += std::exp(x[at(k)] - mx);
          for (int64_t k = 0; k < classes; ++k) sm[at(k)] = std::exp(x[at(k)] - mx) / sum;
          size_t pos = size_t(o * inner + in);
          loss[pos] = std::log(sum) + mx - x[at(int64_t(label[pos]))];
        }
      requireClose(f.result("Softmax"), sm, tolFor(t) * 10);
      requireClose(f.result("Loss"), loss, tolFor(t) * 10);
    }
  }
}
