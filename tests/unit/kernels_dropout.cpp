// dropout / dropout_grad: both implementations, train and test, and the mask's determinism.
#include "kernel_harness.h"

using namespace kt;

namespace {

struct DropRun {
  Tensor out, mask;
};

DropRun runDropout(const Tensor& x, double p, const std::string& impl, bool is_test, int64_t rank = 0,
                   uint64_t seed = 7, int op_seed = 0, const std::string& mask_name = "dropout_0.mask",
                   DType mask_type = DType::UInt8) {
  OpRunner r("dropout");
  r.in("X", {x}).out("Out", {Tensor(x.dtype(), x.shape())}).out("Mask", {Tensor(mask_type, x.shape())}, {mask_name});
  r.attr("dropout_prob", std::to_string(p)).attr("is_test", is_test ? "true" : "false");
  r.attr("dropout_implementation", "\"" + impl + "\"").attr("seed", std::to_string(op_seed));
  r.run(rank, seed);
  return {r.result("Out"), r.result("Mask")};
}

}  // namespace

TEST_CASE("dropout in training keeps 1-p of the elements and scales by the implementation", "[kernels]") {
  Dims s{200, 500};
  for (const std::string impl : {"downgrade_in_infer", "upscale_in_train"})
    for (DType t : floatTypes()) {
      CAPTURE(impl, spopt::dtypeName(t));
      Tensor x = randomTensor(t, s);
      double p = 0.3;
      DropRun d = runDropout(x, p, impl, false);
      std::vector<double> xv = toDoubles(x), mv = toDoubles(d.mask);
      double kept = 0;
      std::vector<double> want(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        REQUIRE((mv[i] == 0 || mv[i] == 1));
        kept += mv[i];
        want[i] = mv[i] * xv[i] * (impl == "upscale_in_train" ? 1 / (1 - p) : 1.0);
      }
      // 100000 Bernoulli(0.7) draws: the standard deviation of the kept fraction is 0.0014.
      REQUIRE(std::fabs(kept / double(xv.size()) - 0.7) < 0.01);
      requireClose(d.out, want, tolFor(t));
    }
}

TEST_CASE("dropout in test mode scales by the implementation", "[kernels]") {
  Tensor x = randomTensor(DType::Float32, {4, 5});
  std::vector<double> xv = toDoubles(x), down, up = xv;
  for (double v : xv) down.push_back(v * 0.75);
  requireClose(runDropout(x, 0.25, "downgrade_in_infer", true).out, down, 1e-6);
  requireClose(runDropout(x, 0.25, "upscale_in_train", true).out, up, 0);
  requireClose(runDropout(x, 0.25, "upscale_in_train", true).mask, std::vector<double>(20, 1.0), 0);
}

TEST_CASE("dropout mask is a pure function of seed, op seed, mask name, rank and index", "[kernels]") {
  Dims s{64, 64};
  Tensor x32 = randomTensor(DType::Float32, s);
  Tensor x64 = randomTensor(DType::Float64, s);
  auto mask = [&](const Tensor& x, int64_t rank, uint64_t seed, int op_seed, const std::string& name) {
    return toDoubles(runDropout(x, 0.5, "upscale_in_train", false, rank, seed, op_seed, name).mask);
  };
  std::vector<double> base = mask(x32, 1, 7, 3, "m");
  REQUIRE(base == mask(x32, 1, 7, 3, "m"));  // repeatable
  REQUIRE(base == mask(x64, 1, 7, 3, "m"));  // independent of dtype and values
  REQUIRE(base != mask(x32, 2, 7, 3, "m"));  // rank
  REQUIRE(base != mask(x32, 1, 8, 3, "m"));  // replay seed
  REQUIRE(base != mask(x32, 1, 7, 4, "m"));  // op seed
  REQUIRE(base != mask(x32, 1, 7, 3, "n"));  // mask var name
  // A bool Mask holds the same flags.
  REQUIRE(base == toDoubles(runDropout(x32, 0.5, "upscale_in_train", false, 1, 7, 3, "m", DType::Bool).mask));
  // A prefix of the mask does not depend on the tensor's size (counter-based per element).
  Tensor small = randomTensor(DType::Float32, {64});
  std::vector<double> head = mask(small, 1, 7, 3, "m");
  REQUIRE(std::equal(head.begin(), head.end(), base.begin()));
}

TEST_CASE("dropout with p = 0 keeps everything and p = 1 drops everything", "[kernels]") {
  Tensor x = randomTensor(DType::Float64, {1000});
  requireClose(runDropout(x, 0.0, "upscale_in_train", false).out, toDoubles(x), 0);
  requireClose(runDropout(x, 1.0, "upscale_in_train", false).out, std::vector<double>(1000, 0.0), 0);
  requireClose(runDropout(x, 1.0, "downgrade_in_infer", false).out, std::vector<double>(1000, 0.0), 0);
}

TEST_CASE("dropout_grad matches finite differences of dropout with the same mask", "[kernels]") {
  Dims s{6, 7};
  for (const std::string impl : {"downgrade_in_infer", "upscale_in_train"})
    for (bool is_test : {false, true}) {
      CAPTURE(impl, is_test);
      std::map<std::string, std::vector<double>> in{{"X", randomValues(numel(s))}};
      std::vector<double> proj = randomValues(numel(s));
      Forward fwd = [&](const auto& v) { return toDoubles(runDropout(fromDoubles(DType::Float64, s, v.at("X")), 0.4, impl, is_test).out); };
      for (DType t : floatTypes()) {
        DropRun d = runDropout(fromDoubles(t, s, in["X"]), 0.4, impl, is_test);
        OpRunner g("dropout_grad");
        g.in("Mask", {d.mask}).in("Out@GRAD", {fromDoubles(t, s, proj)}).out("X@GRAD", {Tensor(t, s)});
        g.attr("dropout_prob", "0.4").attr("is_test", is_test ? "true" : "false");
        g.attr("dropout_implementation", "\"" + impl + "\"").run();
        requireGradMatchesFD(fwd, in, "X", proj, toDoubles(g.result("X@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
      }
    }
}

TEST_CASE("dropout rejects a bad implementation name and a float Mask", "[kernels]") {
  Tensor x = randomTensor(DType::Float32, {4});
  REQUIRE_THROWS_WITH(runDropout(x, 0.5, "sometimes", false), Catch::Contains("dropout_implementation"));
  REQUIRE_THROWS_WITH(runDropout(x, 0.5, "upscale_in_train", false, 0, 7, 0, "m", DType::Float32),
                      Catch::Contains("Mask is float32"));
}
