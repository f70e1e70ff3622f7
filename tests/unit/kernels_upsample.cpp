// conv2d_transpose and nearest_interp (+ grads): hand-computed cases, direct float64 references
// written from Paddle's formulas, and finite differences.
#include <algorithm>

#include "kernel_harness.h"

using namespace kt;

namespace {

// ---- conv2d_transpose ----

struct TransposeCase {
  Dims x, f;  // [N, C, H, W], [C, M / groups, kh, kw]
  Dims strides, paddings, dilations;  // paddings [top, bottom, left, right]
  int groups;
  Dims output_padding, output_size;
  std::string algorithm = "EXPLICIT";
};

const std::vector<TransposeCase>& transposeCases() {
  static const std::vector<TransposeCase> c{
      {{1, 3, 3, 4}, {3, 2, 2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, {}, {}},  // PP-OCRv5's head
      {{2, 2, 3, 3}, {2, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1}, {}},
      {{1, 4, 4, 3}, {4, 1, 3, 2}, {1, 2}, {1, 0, 0, 1}, {2, 1}, 2, {}, {}},
      {{1, 2, 3, 3}, {2, 2, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {}, {6, 5}},
      {{1, 2, 3, 2}, {2, 2, 3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, {}, {}, "SAME"},
      {{2, 3, 3, 3}, {3, 4, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, {}, {}},  // 1x1: the direct (no col2im) path
  };
  return c;
}

// Paddings after the algorithm, and the output dims, from Paddle's conv_transpose rules.
struct TransposeGeo {
  int64_t pad[4], dil[2], out[2];
};
TransposeGeo transposeGeometry(const TransposeCase& c) {
  TransposeGeo g{};
  for (int i = 0; i < 2; ++i) {
    int64_t in = c.x[size_t(2 + i)], k = c.f[size_t(2 + i)], s = c.strides[size_t(i)];
    int64_t pb = c.paddings[size_t(2 * i)], pa = c.paddings[size_t(2 * i + 1)], d = c.dilations[size_t(i)];
    if (c.algorithm == "SAME") {
      int64_t o = (in + s - 1) / s, total = std::max<int64_t>((o - 1) * s + k - in, 0);
      pb = total / 2, pa = total - total / 2, d = 1;
    }
    g.pad[2 * i] = pb, g.pad[2 * i + 1] = pa, g.dil[i] = d;
    int64_t size = (in - 1) * s - pb - pa + d * (k - 1) + 1;
    if (!c.output_padding.empty()) size += c.output_padding[size_t(i)];
    if (!c.output_size.empty()) size = c.output_size[size_t(i)];
    g.out[i] = size;
  }
  return g;
}

Dims transposeOut(const TransposeCase& c) {
  TransposeGeo g = transposeGeometry(c);
  return {c.x[0], c.f[1] * c.groups, g.out[0], g.out[1]};
}

// Each input element scatters x * filter into the output window it stands for.
std::vector<double> refTranspose(const TransposeCase& c, const std::vector<double>& x, const std::vector<double>& f) {
  TransposeGeo g = transposeGeometry(c);
  Dims o = transposeOut(c);
  const int64_t C = c.x[1], H = c.x[2], W = c.x[3], Mg = c.f[1], Cg = C / c.groups, kh = c.f[2], kw = c.f[3];
  std::vector<double> y(size_t(numel(o)), 0.0);
  for (int64_t n = 0; n < c.x[0]; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t iy = 0; iy < H; ++iy)
        for (int64_t ix = 0; ix < W; ++ix)
          for (int64_t m = 0; m < Mg; ++m)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t oy = iy * c.strides[0] - g.pad[0] + i * g.dil[0], ox = ix * c.strides[1] - g.pad[2] + j * g.dil[1];
                if (oy < 0 || oy >= o[2] || ox < 0 || ox >= o[3]) continue;
                int64_t oc = (ci / Cg) * Mg + m;
                y[size_t(((n * o[1] + oc) * o[2] + oy) * o[3] + ox)] +=
                    x[size_t(((n * C + ci) * H + iy) * W + ix)] * f[size_t(((ci * Mg + m) * kh + i) * kw + j)];
              }
  return y;
}

void transposeAttrs(OpRunner& r, const TransposeCase& c) {
  r.attr("strides", dimsJson(c.strides)).attr("paddings", dimsJson(c.paddings)).attr("dilations", dimsJson(c.dilations));
  r.attr("groups", std::to_string(c.groups)).attr("padding_algorithm", "\"" + c.algorithm + "\"").attr("data_format", "\"NCHW\"");
  r.attr("output_padding", dimsJson(c.output_padding)).attr("output_size", dimsJson(c.output_size));
}

Tensor runTranspose(const TransposeCase& c, DType t, const std::vector<double>& x, const std::vector<double>& f) {
  OpRunner r("conv2d_transpose");
  r.in("Input", {fromDoubles(t, c.x, x)}).in("Filter", {fromDoubles(t, c.f, f)}).out("Output", {Tensor(t, transposeOut(c))});
  transposeAttrs(r, c);
  return r.run().result("Output");
}

}  // namespace

TEST_CASE("conv2d_transpose: a hand-computed stride-2 case", "[kernels]") {
  // A 2x2 filter of ones at stride 2 copies each input element into its own 2x2 block.
  TransposeCase c{{1, 1, 2, 2}, {1, 1, 2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, {}, {}};
  requireClose(runTranspose(c, DType::Float32, {1, 2, 3, 4}, {1, 1, 1, 1}), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0);
  // Padding 1 crops the border of the 4x4 result to 2x2; output_padding 1 keeps one more row and column.
  c.paddings = {1, 1, 1, 1};
  requireClose(runTranspose(c, DType::Float64, {1, 2, 3, 4}, {1, 1, 1, 1}), {1, 2, 3, 4}, 0);
  c.output_padding = {1, 1};
  requireClose(runTranspose(c, DType::Float64, {1, 2, 3, 4}, {1, 1, 1, 1}), {1, 2, 2, 3, 4, 4, 3, 4, 4}, 0);
}

TEST_CASE("conv2d_transpose matches a direct float64 reference", "[kernels]") {
  for (const TransposeCase& c : transposeCases())
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(c.x), dimsJson(c.f), dimsJson(c.strides), dimsJson(c.paddings), c.groups, c.algorithm, spopt::dtypeName(t));
      std::vector<double> x = toDoubles(randomTensor(t, c.x)), f = toDoubles(randomTensor(t, c.f));
      requireClose(runTranspose(c, t, x, f), refTranspose(c, x, f), t == DType::Float64 ? 1e-12 : 1e-5);
    }
}

TEST_CASE("conv2d_transpose_grad matches finite differences for Input and Filter", "[kernels]") {
  for (const TransposeCase& c : transposeCases()) {
    CAPTURE(dimsJson(c.x), dimsJson(c.f), dimsJson(c.strides), dimsJson(c.paddings), c.groups, c.algorithm);
    Dims out = transposeOut(c);
    std::map<std::string, std::vector<double>> in{{"Input", randomValues(numel(c.x))}, {"Filter", randomValues(numel(c.f))}};
    std::vector<double> proj = randomValues(numel(out));
    Forward fwd = [&](const auto& v) { return toDoubles(runTranspose(c, DType::Float64, v.at("Input"), v.at("Filter"))); };
    for (DType t : floatTypes()) {
      OpRunner r("conv2d_transpose_grad");
      r.in("Input", {fromDoubles(t, c.x, in["Input"])}).in("Filter", {fromDoubles(t, c.f, in["Filter"])});
      r.in("Output@GRAD", {fromDoubles(t, out, proj)}).out("Input@GRAD", {Tensor(t, c.x)}).out("Filter@GRAD", {Tensor(t, c.f)});
      transposeAttrs(r, c);
      r.run();
      double tol = t == DType::Float64 ? 1e-6 : 1e-4;
      requireGradMatchesFD(fwd, in, "Input", proj, toDoubles(r.result("Input@GRAD")), tol);
      requireGradMatchesFD(fwd, in, "Filter", proj, toDoubles(r.result("Filter@GRAD")), tol);
    }
  }
}

TEST_CASE("conv2d_transpose refuses channels, output_size and output_padding that do not fit", "[kernels]") {
  TransposeCase c{{1, 2, 3, 3}, {2, 2, 3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, {}, {}};
  auto run = [&](const TransposeCase& k, const Dims& x, const Dims& out) {
    OpRunner r("conv2d_transpose");
    r.in("Input", {randomTensor(DType::Float32, x)}).in("Filter", {randomTensor(DType::Float32, k.f)}).out("Output", {Tensor(DType::Float32, out)});
    transposeAttrs(r, k);
    r.run();
  };
  CHECK_THROWS_WITH(run(c, {1, 3, 3, 3}, {1, 2, 7, 7}), Catch::Contains("do not agree"));
  TransposeCase big = c;
  big.output_size = {9, 7};  // [7, 9) holds 7 and 8 only
  CHECK_THROWS_WITH(run(big, c.x, {1, 2, 9, 7}), Catch::Contains("output_size 9 should lie in [7, 9)"));
  TransposeCase pad = c;
  pad.output_padding = {2, 0};
  CHECK_THROWS_WITH(run(pad, c.x, {1, 2, 9, 7}), Catch::Contains("output_padding 2 should lie in [0, max(stride, dilation) = 2)"));
  CHECK_THROWS_WITH(run(c, c.x, {1, 2, 8, 7}), Catch::Contains("Output [1,2,8,7]"));
}

namespace {

// ---- nearest_interp ----

using Attrs = std::vector<std::pair<std::string, std::string>>;

// Paddle's nearest source index, written out: float32 ratio, truncated (or + 0.5 with align_corners).
int64_t refSource(int64_t in, int64_t out, double scale, bool align, int64_t o) {
  float ratio = 0.f;
  if (out > 1) ratio = align ? float(in - 1) / float(out - 1) : scale > 0 ? float(1.0 / double(float(scale))) : float(in) / float(out);
  return align ? int64_t(double(ratio * float(o)) + 0.5) : int64_t(ratio * float(o));
}

// x [N, C, H, W] (or NHWC) to [oh, ow], `scale` (or -1) the scale the ratio uses.
std::vector<double> refNearest(const std::vector<double>& x, const Dims& s, bool nhwc, int64_t oh, int64_t ow, double sh, double sw,
                               bool align) {
  const int64_t n = s[0], c = nhwc ? s[3] : s[1], h = nhwc ? s[1] : s[2], w = nhwc ? s[2] : s[3];
  std::vector<double> y;
  if (nhwc) {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t ch = 0; ch < c; ++ch)
            y.push_back(x[size_t(((b * h + refSource(h, oh, sh, align, oy)) * w + refSource(w, ow, sw, align, ox)) * c + ch)]);
    return y;
  }
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) y.push_back(x[size_t((p * h + refSource(h, oh, sh, align, oy)) * w + refSource(w, ow, sw, align, ox))]);
  return y;
}

Tensor runNearest(const Tensor& x, const Dims& out, const Attrs& attrs, OpRunner* prepared = nullptr) {
  OpRunner own("nearest_interp_v2");
  OpRunner& r = prepared ? *prepared : own;
  r.in("X", {x}).out("Out", {Tensor(x.dtype(), out)});
  for (auto& [k, v] : attrs) r.attr(k, v);
  return r.run().result("Out");
}

}  // namespace

TEST_CASE("nearest_interp: PP-OCRv5's 2x upsampling copies each pixel into a 2x2 block", "[kernels]") {
  Tensor x = fromDoubles(DType::Float32, {1, 1, 2, 2}, {1, 2, 3, 4});
  Attrs attrs{{"scale", "[2.0,2.0]"}, {"interp_method", "\"nearest\""}, {"align_corners", "false"}, {"align_mode", "1"},
              {"out_h", "-1"}, {"out_w", "-1"}, {"data_layout", "\"NCHW\""}};
  requireClose(runNearest(x, {1, 1, 4, 4}, attrs), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0);
}

TEST_CASE("nearest_interp matches Paddle's index arithmetic for scales, sizes, layouts and align_corners", "[kernels]") {
  struct Case {
    Dims x;
    bool nhwc, align;
    Attrs attrs;
    int64_t oh, ow;
    double sh, sw;
  };
  const std::vector<Case> cases{
      {{2, 3, 4, 5}, false, false, {{"scale", "[2.0,3.0]"}}, 8, 15, 2.0, 3.0},
      {{1, 2, 5, 7}, false, false, {{"scale", "[1.5,0.5]"}}, 7, 3, 1.5, 0.5},
      {{1, 2, 5, 7}, false, true, {{"out_h", "9"}, {"out_w", "4"}}, 9, 4, -1, -1},
      {{1, 2, 5, 7}, false, false, {{"out_h", "3"}, {"out_w", "11"}}, 3, 11, -1, -1},
      {{2, 3, 4, 3}, true, false, {{"scale", "[2.0,2.0]"}}, 6, 8, 2.0, 2.0},  // NHWC [N, H, W, C]
  };
  for (const Case& c : cases)
    for (DType t : floatTypes()) {
      CAPTURE(dimsJson(c.x), c.nhwc, c.align, c.oh, c.ow, spopt::dtypeName(t));
      Attrs attrs = c.attrs;
      attrs.push_back({"align_corners", c.align ? "true" : "false"});
      attrs.push_back({"interp_method", "\"nearest\""});
      if (c.nhwc) attrs.push_back({"data_layout", "\"NHWC\""});
      Tensor x = randomTensor(t, c.x);
      Dims out = c.nhwc ? Dims{c.x[0], c.oh, c.ow, c.x[3]} : Dims{c.x[0], c.x[1], c.oh, c.ow};
      requireClose(runNearest(x, out, attrs), refNearest(toDoubles(x), c.x, c.nhwc, c.oh, c.ow, c.sh, c.sw, c.align), 0);
    }
}

TEST_CASE("nearest_interp takes its size from SizeTensor, OutSize or Scale before the attributes", "[kernels]") {
  Tensor x = randomTensor(DType::Float64, {1, 2, 3, 4});
  Attrs attrs{{"scale", "[2.0,2.0]"}, {"align_corners", "false"}};
  std::vector<double> xs = toDoubles(x);
  {
    OpRunner r("nearest_interp_v2");
    r.in("SizeTensor", {fromDoubles(DType::Int32, {1}, {5}), fromDoubles(DType::Int32, {1}, {2})});
    requireClose(runNearest(x, {1, 2, 5, 2}, attrs, &r), refNearest(xs, {1, 2, 3, 4}, false, 5, 2, -1, -1, false), 0);
  }
  {
    // OutSize sets the size; the ratio keeps the scale (Paddle's order).
    OpRunner r("nearest_interp_v2");
    r.in("OutSize", {fromDoubles(DType::Int32, {2}, {4, 7})});
    requireClose(runNearest(x, {1, 2, 4, 7}, attrs, &r), refNearest(xs, {1, 2, 3, 4}, false, 4, 7, 2.0, 2.0, false), 0);
  }
  {
    OpRunner r("nearest_interp_v2");
    r.in("Scale", {fromDoubles(DType::Float32, {1}, {3.0})});
    requireClose(runNearest(x, {1, 2, 9, 12}, attrs, &r), refNearest(xs, {1, 2, 3, 4}, false, 9, 12, 3.0, 3.0, false), 0);
  }
}

TEST_CASE("nearest_interp_grad sums Out@GRAD into the pixels it copied, matching finite differences", "[kernels]") {
  for (bool align : {false, true}) {
    CAPTURE(align);
    Dims s{1, 2, 3, 4}, out{1, 2, 7, 5};
    Attrs attrs{{"out_h", "7"}, {"out_w", "5"}, {"align_corners", align ? "true" : "false"}};
    std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(s))}};
    std::vector<double> proj = randomValues(numel(out));
    Forward fwd = [&](const auto& v) { return toDoubles(runNearest(fromDoubles(DType::Float64, s, v.at("X")), out, attrs)); };
    for (DType t : floatTypes()) {
      OpRunner g("nearest_interp_v2_grad");
      g.in("X", {fromDoubles(t, s, in["X"])}).in("Out@GRAD", {fromDoubles(t, out, proj)}).out("X@GRAD", {Tensor(t, s)});
      for (auto& [k, v] : attrs) g.attr(k, v);
      g.run();
      requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
    }
  }
}

TEST_CASE("nearest_interp refuses another method, a 3-D input and a missing size", "[kernels]") {
  Tensor x = randomTensor(DType::Float32, {1, 2, 3, 4});
  CHECK_THROWS_WITH(runNearest(x, {1, 2, 6, 8}, {{"scale", "[2.0,2.0]"}, {"interp_method", "\"bilinear\""}}),
                    Catch::Contains("interp_method \"bilinear\" is not nearest"));
  CHECK_THROWS_WITH(runNearest(randomTensor(DType::Float32, {2, 3, 4}), {2, 6, 8}, {{"scale", "[2.0,2.0]"}}),
                    Catch::Contains("should be 4-D"));
  CHECK_THROWS_WITH(runNearest(x, {1, 2, 3, 4}, {}), Catch::Contains("should be positive"));
  CHECK_THROWS_WITH(runNearest(x, {1, 2, 6, 9}, {{"scale", "[2.0,2.0]"}}), Catch::Contains("Out [1,2,6,9]"));
}
