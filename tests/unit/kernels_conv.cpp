// conv2d / pool2d (+ grads): hand-computed cases, a direct-loop float64 reference and finite
// differences.
#include <algorithm>
#include <cstring>

#include "kernel_harness.h"

using namespace kt;

namespace {

struct ConvCase {
  Dims x, f;  // [N, C, H, W], [M, C / groups, kh, kw]
  std::string strides, paddings, dilations, algorithm;
  int groups;
};

const std::vector<ConvCase>& convCases() {
  static const std::vector<ConvCase> c{
      {{2, 3, 5, 5}, {4, 3, 3, 3}, "[1,1]", "[1,1]", "[1,1]", "EXPLICIT", 1},
      {{1, 2, 7, 6}, {3, 2, 3, 2}, "[2,1]", "[0,1,2,0]", "[1,1]", "EXPLICIT", 1},
      {{1, 4, 6, 6}, {4, 2, 3, 3}, "[1,1]", "[2,2]", "[2,2]", "EXPLICIT", 2},
      {{2, 3, 5, 4}, {2, 3, 3, 3}, "[2,2]", "[0,0]", "[1,1]", "SAME", 1},
      {{1, 2, 5, 5}, {2, 2, 2, 2}, "[2,2]", "[3,3]", "[1,1]", "VALID", 1},
      {{2, 4, 3, 3}, {6, 4, 1, 1}, "[1,1]", "[0,0]", "[1,1]", "EXPLICIT", 1},  // the direct (no im2col) path
  };
  return c;
}

Dims ints(const std::string& json) {
  Dims d;
  std::string num;
  for (char ch : json) {
    if (ch == '-' || (ch >= '0' && ch <= '9')) num += ch;
    else if (!num.empty()) d.push_back(std::stoll(num)), num.clear();
  }
  return d;
}

// Output dims and the resolved (top, left) padding, written out from Paddle's rules.
struct Geo {
  int64_t oh, ow, pt, pl, sh, sw, dh, dw;
};
Geo geometry(const ConvCase& c) {
  Dims s = ints(c.strides), p = ints(c.paddings), d = ints(c.dilations);
  int64_t pad[4] = {p[0], p.size() == 4 ? p[1] : p[0], p.size() == 4 ? p[2] : p[1], p.size() == 4 ? p[3] : p[1]};
  Geo g{0, 0, 0, 0, s[0], s[1], d[0], d[1]};
  int64_t in[2] = {c.x[2], c.x[3]}, k[2] = {c.f[2], c.f[3]}, out[2], before[2];
  for (int i = 0; i < 2; ++i) {
    int64_t pb = pad[2 * i], pa = pad[2 * i + 1], dil = d[size_t(i)];
    if (c.algorithm == "VALID") pb = pa = 0;
    if (c.algorithm == "SAME") {
      dil = 1;
      int64_t o = (in[i] + s[size_t(i)] - 1) / s[size_t(i)];
      int64_t tot = std::max<int64_t>((o - 1) * s[size_t(i)] + k[i] - in[i], 0);
      pb = tot / 2, pa = tot - tot / 2;
    }
    (i ? g.dw : g.dh) = dil;
    out[i] = (in[i] + pb + pa - (dil * (k[i] - 1) + 1)) / s[size_t(i)] + 1;
    before[i] = pb;
  }
  g.oh = out[0], g.ow = out[1], g.pt = before[0], g.pl = before[1];
  return g;
}

std::vector<double> refConv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& f) {
  Geo g = geometry(c);
  int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], M = c.f[0], cg = C / c.groups, mg = M / c.groups;
  std::vector<double> y(size_t(N * M * g.oh * g.ow), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          double acc = 0;
          int64_t grp = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < c.f[2]; ++i)
              for (int64_t j = 0; j < c.f[3]; ++j) {
                int64_t iy = oy * g.sh - g.pt + i * g.dh, ix = ox * g.sw - g.pl + j * g.dw;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += x[size_t(((n * C + grp * cg + ci) * H + iy) * W + ix)] * f[size_t(((m * cg + ci) * c.f[2] + i) * c.f[3] + j)];
              }
          y[size_t(((n * M + m) * g.oh + oy) * g.ow + ox)] = acc;
        }
  return y;
}

void convAttrs(OpRunner& r, const ConvCase& c) {
  r.attr("strides", c.strides).attr("paddings", c.paddings).attr("dilations", c.dilations);
  r.attr("padding_algorithm", "\"" + c.algorithm + "\"").attr("groups", std::to_string(c.groups)).attr("data_format", "\"NCHW\"");
}

Tensor runConv(const ConvCase& c, DType t, const std::vector<double>& x, const std::vector<double>& f) {
  Geo g = geometry(c);
  OpRunner r("conv2d");
  r.in("Input", {fromDoubles(t, c.x, x)}).in("Filter", {fromDoubles(t, c.f, f)}).out("Output", {Tensor(t, {c.x[0], c.f[0], g.oh, g.ow})});
  convAttrs(r, c);
  r.run();
  return r.result("Output");
}

}  // namespace

TEST_CASE("conv2d: a hand-computed case with padding and stride", "[kernels]") {
  // x = 1..9 as a 3x3 image, a 2x2 filter of ones, padding 1, stride 2: the windows at (-1,-1),
  // (-1,1), (1,-1), (1,1) sum {1}, {2,3}, {4,7}, {5,6,8,9}.
  ConvCase c{{1, 1, 3, 3}, {1, 1, 2, 2}, "[2,2]", "[1,1]", "[1,1]", "EXPLICIT", 1};
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  requireClose(runConv(c, DType::Float32, x, {1, 1, 1, 1}), {1, 5, 11, 28}, 0);
  c.paddings = "[0,0]", c.strides = "[1,1]";
  requireClose(runConv(c, DType::Float64, x, {1, 1, 1, 1}), {12, 16, 24, 28}, 0);
}

TEST_CASE("conv2d matches a direct float64 reference", "[kernels]") {
  for (const ConvCase& c : convCases())
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(c.x), dimsJson(c.f), c.strides, c.paddings, c.dilations, c.algorithm, c.groups, spopt::dtypeName(t));
      std::vector<double> x = toDoubles(randomTensor(t, c.x)), f = toDoubles(randomTensor(t, c.f));
      requireClose(runConv(c, t, x, f), refConv(c, x, f), t == DType::Float64 ? 1e-12 : 1e-5);
    }
}

TEST_CASE("conv2d_grad matches finite differences for Input and Filter", "[kernels]") {
  for (const ConvCase& c : convCases()) {
    CAPTURE(dimsJson(c.x), dimsJson(c.f), c.strides, c.paddings, c.dilations, c.algorithm, c.groups);
    Geo g = geometry(c);
    Dims out = {c.x[0], c.f[0], g.oh, g.ow};
    std::map<std::string, std::vector<double>> in{{"Input", randomValues(numel(c.x))}, {"Filter", randomValues(numel(c.f))}};
    std::vector<double> proj = randomValues(numel(out));
    Forward fwd = [&](const auto& v) { return toDoubles(runConv(c, DType::Float64, v.at("Input"), v.at("Filter"))); };
    for (DType t : floatTypes()) {
      OpRunner r("conv2d_grad");
      r.in("Input", {fromDoubles(t, c.x, in["Input"])}).in("Filter", {fromDoubles(t, c.f, in["Filter"])});
      r.in("Output@GRAD", {fromDoubles(t, out, proj)}).out("Input@GRAD", {Tensor(t, c.x)}).out("Filter@GRAD", {Tensor(t, c.f)});
      convAttrs(r, c);
      r.run();
      double tol = t == DType::Float64 ? 1e-6 : 1e-4;
      requireGradMatchesFD(fwd, in, "Input", proj, toDoubles(r.result("Input@GRAD")), tol);
      requireGradMatchesFD(fwd, in, "Filter", proj, toDoubles(r.result("Filter@GRAD")), tol);
    }
  }
}

TEST_CASE("conv2d rejects channels that do not match the filter and groups", "[kernels]") {
  OpRunner r("conv2d");
  r.in("Input", {randomTensor(DType::Float32, {1, 3, 4, 4})}).in("Filter", {randomTensor(DType::Float32, {2, 2, 3, 3})});
  r.out("Output", {Tensor(DType::Float32, {1, 2, 2, 2})});
  REQUIRE_THROWS_WITH(r.run(), Catch::Contains("do not agree"));
}

namespace {

struct PoolCase {
  Dims x;
  std::string type, ksize, strides, paddings;
  bool exclusive = true, ceil = false, global = false, adaptive = false;
  Dims out;
};

Tensor runPool(const PoolCase& c, DType t, const std::vector<double>& x) {
  OpRunner r("pool2d");
  r.in("X", {fromDoubles(t, c.x, x)}).out("Out", {Tensor(t, c.out)});
  r.attr("pooling_type", "\"" + c.type + "\"").attr("ksize", c.ksize).attr("strides", c.strides).attr("paddings", c.paddings);
  r.attr("exclusive", c.exclusive ? "true" : "false").attr("ceil_mode", c.ceil ? "true" : "false");
  r.attr("global_pooling", c.global ? "true" : "false").attr("adaptive", c.adaptive ? "true" : "false");
  r.run();
  return r.result("Out");
}

std::vector<double> iota(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(i + 1));
  return v;
}

}  // namespace

TEST_CASE("pool2d: hand-computed max, avg, ceil_mode, global and adaptive cases", "[kernels]") {
  std::vector<double> x = iota(16);  // a 4x4 image 1..16
  SECTION("max 2x2 stride 2") { requireClose(runPool({{1, 1, 4, 4}, "max", "[2,2]", "[2,2]", "[0,0]", true, false, false, false, {1, 1, 2, 2}}, DType::Float32, x), {6, 8, 14, 16}, 0); }
  SECTION("max 3x3 stride 2 padding 1 (ResNet's stem)") {
    requireClose(runPool({{1, 1, 4, 4}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {1, 1, 2, 2}}, DType::Float32, x), {6, 8, 14, 16}, 0);
  }
  SECTION("avg 2x2 stride 2 padding 1, exclusive and not") {
    // Windows: {1}, {2,3}, {4}; {5,9}, {6,7,10,11}, {8,12}; {13}, {14,15}, {16}.
    PoolCase c{{1, 1, 4, 4}, "avg", "[2,2]", "[2,2]", "[1,1]", true, false, false, false, {1, 1, 3, 3}};
    requireClose(runPool(c, DType::Float64, x), {1, 2.5, 4, 7, 8.5, 10, 13, 14.5, 16}, 1e-15);
    c.exclusive = false;
    requireClose(runPool(c, DType::Float64, x), {0.25, 1.25, 1, 3.5, 8.5, 5, 3.25, 7.25, 4}, 1e-15);
  }
  SECTION("ceil_mode keeps the last partial window") {
    requireClose(runPool({{1, 1, 4, 4}, "max", "[3,3]", "[2,2]", "[0,0]", true, true, false, false, {1, 1, 2, 2}}, DType::Float32, x), {11, 12, 15, 16}, 0);
  }
  SECTION("global avg") { requireClose(runPool({{1, 1, 4, 4}, "avg", "[-1,-1]", "[1,1]", "[0,0]", true, false, true, false, {1, 1, 1, 1}}, DType::Float64, x), {8.5}, 1e-15); }
  SECTION("adaptive avg 4 -> 3") {
    // Rows and columns [0,2), [1,3), [2,4).
    requireClose(runPool({{1, 1, 4, 4}, "avg", "[3,3]", "[1,1]", "[0,0]", true, false, false, true, {1, 1, 3, 3}}, DType::Float64, x),
                 {3.5, 4.5, 5.5, 7.5, 8.5, 9.5, 11.5, 12.5, 13.5}, 1e-15);
  }
}

TEST_CASE("pool2d_grad matches finite differences", "[kernels]") {
  const std::vector<PoolCase> cases{
      {{2, 2, 5, 5}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {2, 2, 3, 3}},
      {{1, 2, 5, 4}, "avg", "[2,3]", "[2,1]", "[1,1]", true, false, false, false, {1, 2, 3, 4}},
      {{1, 2, 5, 4}, "avg", "[2,3]", "[2,1]", "[1,1]", false, true, false, false, {1, 2, 4, 4}},
      {{2, 3, 4, 4}, "avg", "[-1,-1]", "[1,1]", "[0,0]", true, false, true, false, {2, 3, 1, 1}},
      {{1, 1, 5, 5}, "max", "[2,2]", "[1,1]", "[0,0]", true, false, false, true, {1, 1, 2, 2}},
  };
  for (const PoolCase& c : cases) {
    CAPTURE(dimsJson(c.x), c.type, c.ksize, c.strides, c.paddings, c.exclusive, c.ceil, c.global, c.adaptive);
    std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(c.x))}};
    std::vector<double> proj = randomValues(numel(c.out));
    Forward fwd = [&](const auto& v) { return toDoubles(runPool(c, DType::Float64, v.at("X"))); };
    for (DType t : floatTypes()) {
      OpRunner r("pool2d_grad");
      r.in("X", {fromDoubles(t, c.x, in["X"])}).in("Out", {runPool(c, t, in["X"])}).in("Out@GRAD", {fromDoubles(t, c.out, proj)});
      r.out("X@GRAD", {Tensor(t, c.x)});
      r.attr("pooling_type", "\"" + c.type + "\"").attr("ksize", c.ksize).attr("strides", c.strides).attr("paddings", c.paddings);
      r.attr("exclusive", c.exclusive ? "true" : "false").attr("ceil_mode", c.ceil ? "true" : "false");
      r.attr("global_pooling", c.global ? "true" : "false").attr("adaptive", c.adaptive ? "true" : "false");
      r.run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(r.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-4);
    }
  }
}

namespace {

// Paddle's CPU max pooling and its grad window by window, in float32: the first maximum in
// row-major order, and each window's gradient added to its first element equal to Out.
struct MaxPoolReference {
  Dims x;
  int64_t oh, ow;
  std::vector<float> forward(const std::vector<float>& v) const {
    std::vector<float> out;
    for (int64_t pl = 0; pl < x[0] * x[1]; ++pl)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          float a = -INFINITY;
          for (int64_t iy = std::max<int64_t>(2 * oy - 1, 0); iy < std::min(2 * oy + 2, x[2]); ++iy)
            for (int64_t ix = std::max<int64_t>(2 * ox - 1, 0); ix < std::min(2 * ox + 2, x[3]); ++ix)
              a = std::max(a, v[size_t((pl * x[2] + iy) * x[3] + ix)]);
          out.push_back(a);
        }
    return out;
  }
  std::vector<float> grad(const std::vector<float>& v, const std::vector<float>& out, const std::vector<float>& g) const {
    std::vector<float> d(v.size(), 0.0f);
    for (int64_t pl = 0; pl < x[0] * x[1]; ++pl)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          const size_t o = size_t((pl * oh + oy) * ow + ox);
          for (int64_t iy = std::max<int64_t>(2 * oy - 1, 0), found = 0; !found && iy < std::min(2 * oy + 2, x[2]); ++iy)
            for (int64_t ix = std::max<int64_t>(2 * ox - 1, 0); !found && ix < std::min(2 * ox + 2, x[3]); ++ix)
              if (size_t at = size_t((pl * x[2] + iy) * x[3] + ix); v[at] == out[o]) d[at] += g[o], found = 1;
        }
    return d;
  }
};

std::vector<float> floats(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }
bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

// max 3x3 / 2 with padding 1 on float32 takes its own loops forward (pool_3x3s2.cpp); with ties
// (equal values, +0 and -0), NaN, -inf, odd and even sizes and ceil_mode, it and the grad must
// give the reference's bits.
TEST_CASE("pool2d max 3x3/2 float32: the bits of window-by-window pooling", "[kernels]") {
  const std::vector<PoolCase> cases{
      {{1, 2, 7, 7}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {1, 2, 4, 4}},
      {{2, 1, 8, 6}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {2, 1, 4, 3}},
      {{1, 1, 8, 9}, "max", "[3,3]", "[2,2]", "[1,1]", true, true, false, false, {1, 1, 5, 5}},
      {{1, 3, 112, 40}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {1, 3, 56, 20}},
      {{1, 1, 1, 1}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {1, 1, 1, 1}},
      {{1, 2, 2, 3}, "max", "[3,3]", "[2,2]", "[1,1]", true, true, false, false, {1, 2, 2, 2}},
      {{1, 1, 5, 2}, "max", "[3,3]", "[2,2]", "[1,1]", true, false, false, false, {1, 1, 3, 1}},
  };
  const double pick[] = {-1.0, -0.0, 0.0, 1.0, 2.0, 2.0, 0.5, NAN, -INFINITY, 2.0};
  for (const PoolCase& c : cases) {
    CAPTURE(dimsJson(c.x), c.ceil);
    std::vector<double> xv;
    for (int64_t i = 0; i < numel(c.x); ++i) xv.push_back(pick[(uint64_t(i) * 2654435761u >> 7) % 10]);
    const Tensor out = runPool(c, DType::Float32, xv);
    const MaxPoolReference ref{c.x, c.out[2], c.out[3]};
    const Tensor x = fromDoubles(DType::Float32, c.x, xv);
    REQUIRE(sameBits(floats(out), ref.forward(floats(x))));
    const Tensor g = randomTensor(DType::Float32, c.out);
    OpRunner r("pool2d_grad");
    r.in("X", {x}).in("Out", {out}).in("Out@GRAD", {g}).out("X@GRAD", {Tensor(DType::Float32, c.x)});
    r.attr("pooling_type", "\"max\"").attr("ksize", c.ksize).attr("strides", c.strides).attr("paddings", c.paddings);
    r.attr("ceil_mode", c.ceil ? "true" : "false");
    r.run();
    REQUIRE(sameBits(floats(r.result("X@GRAD")), ref.grad(floats(x), floats(out), floats(g))));
  }
}
