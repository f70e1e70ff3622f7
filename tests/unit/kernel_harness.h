#pragma once
// Test driver for kernels: builds an Op (a Job is only its arena), binds tensors to slots through
// a map-backed KernelIO, runs the registered kernel. Plus random inputs, float64 references,
// closeness checks and central finite differences for backward ops.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/kernels/kernels.h"
#include "runtime/tensor.h"

namespace kt {

using spopt::DType;
using spopt::rt::Tensor;
using Dims = std::vector<int64_t>;

class MapIO : public spopt::rt::KernelIO {
 public:
  std::map<std::string, std::vector<Tensor>, std::less<>> ins, outs;
  const Tensor* input(std::string_view slot, size_t i) const override {
    auto it = ins.find(slot);
    return it == ins.end() || i >= it->second.size() ? nullptr : &it->second[i];
  }
  size_t inputCount(std::string_view slot) const override {
    auto it = ins.find(slot);
    return it == ins.end() ? 0 : it->second.size();
  }
  Tensor* output(std::string_view slot, size_t i) override {
    auto it = outs.find(slot);
    return it == outs.end() || i >= it->second.size() ? nullptr : &it->second[i];
  }
  size_t outputCount(std::string_view slot) const override {
    auto it = outs.find(slot);
    return it == outs.end() ? 0 : it->second.size();
  }
};

// One op with its tensors. Tensors are shared handles: binding the same Tensor to an input and an
// output makes them alias (as the executor does for sgd's ParamOut).
struct OpRunner {
  spopt::Job job;
  spopt::Op op;
  MapIO io;

  explicit OpRunner(std::string_view type) : op(spopt::makeOp(job, type)) {}
  OpRunner& in(std::string_view slot, std::vector<Tensor> ts, std::vector<std::string> names = {}) {
    spopt::addInput(op, job, slot, argNames(slot, ts.size(), names));
    io.ins[std::string(slot)] = std::move(ts);
    return *this;
  }
  OpRunner& out(std::string_view slot, std::vector<Tensor> ts, std::vector<std::string> names = {}) {
    spopt::addOutput(op, job, slot, argNames(slot, ts.size(), names));
    io.outs[std::string(slot)] = std::move(ts);
    return *this;
  }
  OpRunner& attr(std::string_view key, std::string_view raw_json) {
    op.attrs.setRaw(job.arena, key, raw_json);
    return *this;
  }
  OpRunner& run(int64_t rank = 0, uint64_t seed = 7) {
    auto fn = spopt::rt::findKernel(op.type);
    REQUIRE(fn != nullptr);
    spopt::OpView view(op);
    spopt::rt::KernelContext ctx{view, rank, seed, io};
    fn(ctx);
    return *this;
  }
  // With a ring (a KernelAllReduce op), from a rank's thread: no Catch assertion here (Catch is not
  // thread-safe); the kernel's error propagates.
  OpRunner& runOn(spopt::rt::KernelRing& ring, int64_t rank, uint64_t seed = 7) {
    auto fn = spopt::rt::findKernel(op.type);
    if (!fn) throw std::logic_error("no kernel for " + std::string(op.type));
    spopt::OpView view(op);
    spopt::rt::KernelContext ctx{view, rank, seed, io, &ring};
    fn(ctx);
    return *this;
  }
  Tensor& result(std::string_view slot, size_t i = 0) { return io.outs.find(slot)->second.at(i); }

 private:
  std::vector<std::string_view> argNames(std::string_view slot, size_t n, const std::vector<std::string>& names) {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(job.arena.store(i < names.size() ? names[i] : std::string(slot) + "_" + std::to_string(i)));
    return out;
  }
};

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(20261202);
  return r;
}

inline int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// Values in +-[0.1, 1.0]: never zero, well away from relu's kink.
inline std::vector<double> randomValues(int64_t n) {
  std::uniform_real_distribution<double> mag(0.1, 1.0);
  std::bernoulli_distribution sign(0.5);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = sign(rng()) ? mag(rng()) : -mag(rng());
  return v;
}

inline Tensor fromDoubles(DType t, const Dims& shape, const std::vector<double>& v) {
  Tensor out(t, shape);
  REQUIRE(int64_t(v.size()) == out.numel());
  for (int64_t i = 0; i < out.numel(); ++i) {
    switch (out.storage()) {
      case spopt::rt::Storage::F32: out.data<float>()[i] = float(v[size_t(i)]); break;
      case spopt::rt::Storage::F64: out.data<double>()[i] = v[size_t(i)]; break;
      case spopt::rt::Storage::I64: out.data<int64_t>()[i] = int64_t(v[size_t(i)]); break;
      case spopt::rt::Storage::U8: out.data<uint8_t>()[i] = uint8_t(v[size_t(i)]); break;
    }
  }
  return out;
}

inline std::vector<double> toDoubles(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.storage()) {
      case spopt::rt::Storage::F32: v[size_t(i)] = t.data<float>()[i]; break;
      case spopt::rt::Storage::F64: v[size_t(i)] = t.data<double>()[i]; break;
      case spopt::rt::Storage::I64: v[size_t(i)] = double(t.data<int64_t>()[i]); break;
      case spopt::rt::Storage::U8: v[size_t(i)] = t.data<uint8_t>()[i]; break;
    }
  }
  return v;
}

// Distinct values 7i - 3 (for integer tensors, where random floats would truncate).
inline std::vector<double> sequence(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(i * 7 - 3));
  return v;
}

// A random tensor; its values as doubles (after rounding to the dtype) for the reference.
inline Tensor randomTensor(DType t, const Dims& shape) { return fromDoubles(t, shape, randomValues(numel(shape))); }

// Tolerance for comparing a kernel in dtype `t` with a float64 reference.
inline double tolFor(DType t) { return t == DType::Float64 ? 1e-12 : 2e-5; }

// |got - want| <= tol * (1 + |want|) everywhere; reports the first offender.
inline void requireClose(const Tensor& got, const std::vector<double>& want, double tol) {
  std::vector<double> g = toDoubles(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - want[i]) <= tol * (1 + std::fabs(want[i])))) {
      INFO("element " << i << ": got " << g[i] << ", want " << want[i] << ", tol " << tol);
      REQUIRE(std::fabs(g[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
    }
  }
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central finite differences of the scalar loss dot(projection, forward(inputs)) with respect to
// input `name`, compared with `analytic` (the backward op's result for Out@GRAD = projection).
// Checks up to `max_elems` evenly spread elements (all when the tensor is small).
using Forward = std::function<std::vector<double>(const std::map<std::string, std::vector<double>>&)>;
inline void requireGradMatchesFD(const Forward& forward, std::map<std::string, std::vector<double>> inputs,
                                 const std::string& name, const std::vector<double>& projection,
                                 const std::vector<double>& analytic, double tol = 1e-6, size_t max_elems = 200) {
  std::vector<double>& x = inputs.at(name);
  REQUIRE(analytic.size() == x.size());
  const double h = 1e-6;
  size_t step = std::max<size_t>(1, x.size() / max_elems);
  for (size_t i = 0; i < x.size(); i += step) {
    double saved = x[i];
    x[i] = saved + h;
    double up = dot(projection, forward(inputs));
    x[i] = saved - h;
    double down = dot(projection, forward(inputs));
    x[i] = saved;
    double numeric = (up - down) / (2 * h);
    if (!(std::fabs(numeric - analytic[i]) <= tol * (1 + std::fabs(numeric)))) {
      INFO("d loss / d " << name << "[" << i << "]: analytic " << analytic[i] << ", finite difference " << numeric);
      REQUIRE(std::fabs(numeric - analytic[i]) <= tol * (1 + std::fabs(numeric)));
    }
  }
}

inline const std::vector<DType>& floatTypes() {
  static const std::vector<DType> t{DType::Float32, DType::Float64};
  return t;
}

inline std::string dimsJson(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace kt
