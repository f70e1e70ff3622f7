// spopt-kernel-parity: every op of ops.md on the device executor (CUDA kernels / cuBLAS, or the
// CPU kernel on host copies where an op has no device implementation) against the CPU executor,
// on the generated random inputs (runtime/inputs.h: uniform in [-1, 1), never all zero).
// Prints a table: op, dtype, path (device / host), max abs error, relative error ||d-c||/||c||.
// Exit 0 when every case is within tolerance (float32 1e-5, float64 1e-12 relative; dropout
// masks bitwise), 1 otherwise, 77 when there is no CUDA device. Built only with the nccl backend.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/loader.h"
#include "runtime/executor.h"
#include "runtime/kernels/kernels.h"
#include "runtime/nccl/device_executor.h"
#include "runtime/nccl/device_ops.h"
#include "runtime/nccl/nccl_backend.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::rt;
using json = nlohmann::ordered_json;

namespace {

// One-op jobs have no collectives: both communicators refuse to be used.
struct NoHostComm final : Communicator {
  int64_t rank() const override { return 0; }
  void allReduce(int64_t, const Tensor&, Tensor&, ReduceOp, const OpDesc&) override { throw std::logic_error("no collectives"); }
  void reduceScatter(int64_t, const Tensor&, Tensor&, const OpDesc&) override { throw std::logic_error("no collectives"); }
  void allGather(int64_t, const Tensor&, Tensor&, const OpDesc&) override { throw std::logic_error("no collectives"); }
  void broadcast(int64_t, const Tensor&, Tensor&, int64_t, const OpDesc&) override { throw std::logic_error("no collectives"); }
  void reduce(int64_t, const Tensor&, Tensor&, int64_t, const OpDesc&) override { throw std::logic_error("no collectives"); }
  void sendRecv(int64_t, std::vector<P2PTransfer>&) override { throw std::logic_error("no collectives"); }
};
struct NoDeviceComm final : DeviceComm {
  void allReduce(int64_t, const DevTensor&, DevTensor&, ReduceOp, const OpDesc&, cudaStream_t) override { throw std::logic_error("no collectives"); }
  void reduceScatter(int64_t, const DevTensor&, DevTensor&, const OpDesc&, cudaStream_t) override { throw std::logic_error("no collectives"); }
  void allGather(int64_t, const DevTensor&, DevTensor&, const OpDesc&, cudaStream_t) override { throw std::logic_error("no collectives"); }
  void broadcast(int64_t, const DevTensor&, DevTensor&, int64_t, const OpDesc&, cudaStream_t) override { throw std::logic_error("no collectives"); }
  void reduce(int64_t, const DevTensor&, DevTensor&, int64_t, const OpDesc&, cudaStream_t) override { throw std::logic_error("no collectives"); }
  void sendRecv(int64_t, P2PKind, int64_t, DevTensor&, const OpDesc&, cudaStream_t, bool, bool) override { throw std::logic_error("no collectives"); }
  void abort() override {}
};

struct Arg {
  Arg(std::string n, std::vector<int64_t> s, std::string d = "") : name(std::move(n)), shape(std::move(s)), dtype(std::move(d)) {}
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;  // empty: the case's dtype
};
using Slots = std::vector<std::pair<std::string, std::vector<Arg>>>;
struct Case {
  Case(std::string o, Slots i, Slots out, json a = json::object())
      : op(std::move(o)), inputs(std::move(i)), outputs(std::move(out)), attrs(std::move(a)) {}
  std::string op;
  Slots inputs, outputs;
  json attrs;
};

// A one-rank job running `c` once; every output is fetched.
std::string jobText(const Case& c, const std::string& dtype) {
  json vars = json::array(), ins = json::object(), outs = json::object(), fetch = json::array();
  auto declare = [&](const Arg& a, bool persistable) {
    vars.push_back({{"name", a.name}, {"shape", a.shape}, {"dtype", a.dtype.empty() ? dtype : a.dtype}, {"persistable", persistable}});
  };
  for (const auto& [slot, args] : c.inputs)
    for (const auto& a : args) declare(a, false), ins[slot].push_back(a.name);
  for (const auto& [slot, args] : c.outputs)
    for (const auto& a : args) declare(a, false), outs[slot].push_back(a.name), fetch.push_back(a.name);
  json op = {{"type", c.op}, {"inputs", ins}, {"outputs", outs}, {"attrs", c.attrs}};
  json block = {{"idx", 0}, {"parent_idx", -1}, {"vars", vars}, {"ops", json::array({op})}};
  json job = {{"format", "sp-opt.program"}, {"version", 1}, {"world_size", 1}, {"process_groups", json::array()},
              {"programs", json::array({{{"rank", 0}, {"fetch", fetch}, {"blocks", json::array({block})}}})}};
  return job.dump();
}

std::vector<Case> cases() {
  using S = std::vector<int64_t>;
  auto io = [](std::string slot, std::vector<Arg> a) { return std::pair{std::move(slot), std::move(a)}; };
  std::vector<Case> v;
  // matmul: folded batch, strided-batched, broadcast batch, transposes, 1-D operands
  v.push_back({"matmul_v2", {io("X", {{"x", {4, 8, 16}}}), io("Y", {{"y", {16, 12}}})}, {io("Out", {{"o", {4, 8, 12}}})}});
  v.push_back({"matmul_v2", {io("X", {{"x", {2, 3, 5, 7}}}), io("Y", {{"y", {2, 3, 7, 4}}})}, {io("Out", {{"o", {2, 3, 5, 4}}})}});
  v.push_back({"matmul_v2", {io("X", {{"x", {3, 5, 7}}}), io("Y", {{"y", {2, 1, 7, 4}}})}, {io("Out", {{"o", {2, 3, 5, 4}}})}});
  v.push_back({"matmul_v2", {io("X", {{"x", {7, 5}}}), io("Y", {{"y", {4, 7}}})}, {io("Out", {{"o", {5, 4}}})}, {{"trans_x", true}, {"trans_y", true}}});
  v.push_back({"matmul_v2", {io("X", {{"x", {7}}}), io("Y", {{"y", {7, 4}}})}, {io("Out", {{"o", {4}}})}});
  v.push_back({"matmul_v2_grad", {io("X", {{"x", {4, 8, 16}}}), io("Y", {{"y", {16, 12}}}), io("Out@GRAD", {{"g", {4, 8, 12}}})},
               {io("X@GRAD", {{"dx", {4, 8, 16}}}), io("Y@GRAD", {{"dy", {16, 12}}})}});
  v.push_back({"matmul_v2_grad", {io("X", {{"x", {2, 7, 5}}}), io("Y", {{"y", {2, 4, 7}}}), io("Out@GRAD", {{"g", {2, 5, 4}}})},
               {io("X@GRAD", {{"dx", {2, 7, 5}}}), io("Y@GRAD", {{"dy", {2, 4, 7}}})}, {{"trans_x", true}, {"trans_y", true}}});
  for (std::string op : {"elementwise_add", "elementwise_mul"}) {
    v.push_back({op, {io("X", {{"x", {4, 6, 8}}}), io("Y", {{"y", {8}}})}, {io("Out", {{"o", {4, 6, 8}}})}});
    v.push_back({op, {io("X", {{"x", {4, 6, 8}}}), io("Y", {{"y", {6}}})}, {io("Out", {{"o", {4, 6, 8}}})}, {{"axis", 1}}});
    v.push_back({op + "_grad", {io("X", {{"x", {4, 6, 8}}}), io("Y", {{"y", {6, 1}}}), io("Out@GRAD", {{"g", {4, 6, 8}}})},
                 {io("X@GRAD", {{"dx", {4, 6, 8}}}), io("Y@GRAD", {{"dy", {6, 1}}})}, {{"axis", 1}}});
    v.push_back({op + "_grad", {io("X", {{"x", {5, 33}}}), io("Y", {{"y", {5, 33}}}), io("Out@GRAD", {{"g", {5, 33}}})},
                 {io("X@GRAD", {{"dx", {5, 33}}}), io("Y@GRAD", {{"dy", {5, 33}}})}});
  }
  S sh{6, 50};
  v.push_back({"relu", {io("X", {{"x", sh}})}, {io("Out", {{"o", sh}})}});
  v.push_back({"relu_grad", {io("Out", {{"x", sh}}), io("Out@GRAD", {{"g", sh}})}, {io("X@GRAD", {{"dx", sh}})}});
  for (bool approx : {false, true}) {
    v.push_back({"gelu", {io("X", {{"x", sh}})}, {io("Out", {{"o", sh}})}, {{"approximate", approx}}});
    v.push_back({"gelu_grad", {io("X", {{"x", sh}}), io("Out@GRAD", {{"g", sh}})}, {io("X@GRAD", {{"dx", sh}})}, {{"approximate", approx}}});
  }
  v.push_back({"scale", {io("X", {{"x", sh}})}, {io("Out", {{"o", sh}})}, {{"scale", 0.5}, {"bias", 2.0}, {"bias_after_scale", false}}});
  v.push_back({"softmax", {io("X", {{"x", {3, 4, 10}}})}, {io("Out", {{"o", {3, 4, 10}}})}});
  v.push_back({"softmax", {io("X", {{"x", {3, 4, 10}}})}, {io("Out", {{"o", {3, 4, 10}}})}, {{"axis", 1}}});
  v.push_back({"softmax_grad", {io("Out", {{"x", {3, 4, 10}}}), io("Out@GRAD", {{"g", {3, 4, 10}}})}, {io("X@GRAD", {{"dx", {3, 4, 10}}})}});
  v.push_back({"dropout", {io("X", {{"x", {16, 64}}})}, {io("Out", {{"o", {16, 64}}}), io("Mask", {{"m", {16, 64}, "uint8"}})},
               {{"dropout_prob", 0.3}, {"seed", 7}, {"dropout_implementation", "upscale_in_train"}}});
  v.push_back({"dropout", {io("X", {{"x", {16, 64}}})}, {io("Out", {{"o", {16, 64}}}), io("Mask", {{"m", {16, 64}, "uint8"}})},
               {{"dropout_prob", 0.5}, {"is_test", true}}});
  v.push_back({"dropout_grad", {io("Mask", {{"m", {16, 64}, "uint8"}}), io("Out@GRAD", {{"g", {16, 64}}})}, {io("X@GRAD", {{"dx", {16, 64}}})},
               {{"dropout_prob", 0.3}, {"dropout_implementation", "upscale_in_train"}}});
  v.push_back({"layer_norm", {io("X", {{"x", {4, 5, 32}}}), io("Scale", {{"s", {32}}}), io("Bias", {{"b", {32}}})},
               {io("Y", {{"y", {4, 5, 32}}}), io("Mean", {{"mu", {20}}}), io("Variance", {{"var", {20}}})}, {{"begin_norm_axis", 2}, {"epsilon", 1e-5}}});
  // Variance is a random input in [-1, 1): epsilon 2 keeps variance + epsilon positive.
  v.push_back({"layer_norm_grad",
               {io("X", {{"x", {20, 32}}}), io("Scale", {{"s", {32}}}), io("Bias", {{"b", {32}}}), io("Mean", {{"mu", {20}}}),
                io("Variance", {{"var", {20}}}), io("Y@GRAD", {{"g", {20, 32}}})},
               {io("X@GRAD", {{"dx", {20, 32}}}), io("Scale@GRAD", {{"ds", {32}}}), io("Bias@GRAD", {{"db", {32}}})},
               {{"begin_norm_axis", 1}, {"epsilon", 2.0}}});
  v.push_back({"reshape2", {io("X", {{"x", {4, 6, 8}}})}, {io("Out", {{"o", {4, 48}}}), io("XShape", {{"xs", {0, 4, 6, 8}}})}, {{"shape", {0, -1}}}});
  v.push_back({"reshape2_grad", {io("XShape", {{"xs", {0, 4, 6, 8}}}), io("Out@GRAD", {{"g", {4, 48}}})}, {io("X@GRAD", {{"dx", {4, 6, 8}}})}});
  v.push_back({"transpose2", {io("X", {{"x", {2, 3, 4, 5}}})}, {io("Out", {{"o", {2, 4, 3, 5}}}), io("XShape", {{"xs", {0, 2, 3, 4, 5}}})}, {{"axis", {0, 2, 1, 3}}}});
  v.push_back({"transpose2_grad", {io("XShape", {{"xs", {0, 2, 3, 4, 5}}}), io("Out@GRAD", {{"g", {2, 4, 3, 5}}})}, {io("X@GRAD", {{"dx", {2, 3, 4, 5}}})},
               {{"axis", {0, 2, 1, 3}}}});
  v.push_back({"split", {io("X", {{"x", {4, 6, 8}}})}, {io("Out", {{"o0", {4, 2, 8}}, {"o1", {4, 4, 8}}})}, {{"axis", 1}, {"sections", {2, -1}}}});
  v.push_back({"concat", {io("X", {{"x0", {4, 2, 8}}, {"x1", {4, 3, 8}}})}, {io("Out", {{"o", {4, 5, 8}}})}, {{"axis", 1}}});
  v.push_back({"reduce_sum", {io("X", {{"x", {4, 6, 8}}})}, {io("Out", {{"o", {4, 8}}})}, {{"dim", {1}}}});
  v.push_back({"reduce_mean", {io("X", {{"x", {4, 6, 8}}})}, {io("Out", {{"o", {4, 1, 1}}})}, {{"dim", {1, 2}}, {"keep_dim", true}}});
  v.push_back({"mean", {io("X", {{"x", {4, 6, 8}}})}, {io("Out", {{"o", {1}}})}});
  v.push_back({"reduce_sum_grad", {io("X", {{"x", {4, 6, 8}}}), io("Out@GRAD", {{"g", {4, 8}}})}, {io("X@GRAD", {{"dx", {4, 6, 8}}})}, {{"dim", {1}}}});
  v.push_back({"mean_grad", {io("X", {{"x", {4, 6, 8}}}), io("Out@GRAD", {{"g", {1}}})}, {io("X@GRAD", {{"dx", {4, 6, 8}}})}});
  v.push_back({"fill_constant", {}, {io("Out", {{"o", {3, 7}}})}, {{"shape", {3, 7}}, {"value", 1.5}}});
  v.push_back({"fill_constant", {}, {io("Out", {{"o", {2, 5}, "int64"}})}, {{"shape", {2, 5}}, {"value", 3.0}, {"dtype", 3}}});
  v.push_back({"assign", {io("X", {{"x", sh}})}, {io("Out", {{"o", sh}})}});
  v.push_back({"sum", {io("X", {{"a", sh}, {"b", sh}, {"c", sh}})}, {io("Out", {{"o", sh}})}});
  v.push_back({"sgd", {io("Param", {{"p", sh}}), io("LearningRate", {{"lr", {1}}}), io("Grad", {{"g", sh}})}, {io("ParamOut", {{"po", sh}})}});
  return v;
}

double relError(const Tensor& c, const Tensor& d, double& max_abs, bool& bitwise) {
  max_abs = 0;
  double num = 0, den = 0;
  bitwise = c.bytes() == d.bytes() && (c.bytes() == 0 || std::memcmp(c.raw(), d.raw(), c.bytes()) == 0);
  for (int64_t i = 0; i < c.numel(); ++i) {
    double a, b;
    switch (c.storage()) {
      case Storage::F32: a = c.data<float>()[i], b = d.data<float>()[i]; break;
      case Storage::F64: a = c.data<double>()[i], b = d.data<double>()[i]; break;
      case Storage::I64: a = double(c.data<int64_t>()[i]), b = double(d.data<int64_t>()[i]); break;
      default: a = c.data<uint8_t>()[i], b = d.data<uint8_t>()[i]; break;
    }
    double e = std::fabs(a - b);
    if (!(e <= max_abs)) max_abs = e;  // NaN sticks
    num += (a - b) * (a - b);
    den += b * b;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace

int main() {
  // Coverage (needs no GPU): CPU kernels that have no device implementation at all.
  std::string host_only;
  for (std::string_view op : supportedKernelOps())
    if (!findDeviceKernel(op)) host_only += " " + std::string(op);
  std::cout << "device implementations: " << deviceKernelOps().size() << " ops; CPU-only (run on host copies):"
            << (host_only.empty() ? " none" : host_only) << "\n";
  try {
    usableDeviceCount();
  } catch (const InputError& e) {
    std::cout << "spopt-kernel-parity: skipped: " << e.what() << "\n";
    return 77;
  }
  std::printf("| op | dtype | path | max abs error | rel error | result |\n| --- | --- | --- | --- | --- | --- |\n");
  int failures = 0, count = 0;
  for (const Case& c : cases()) {
    for (std::string dtype : {"float32", "float64"}) {
      ++count;
      std::string path = findDeviceKernel(c.op) ? "device" : "host copy";
      try {
        auto job = loadJobFromText(jobText(c, dtype), c.op + ".json");
        const Program& p = *job->programs.front();
        ExecOptions eo{1234, "", false};
        NoHostComm hc;
        NoDeviceComm dc;
        RankRun cpu = executeProgram(p, hc, eo);
        RankRun gpu = executeOnDevice(p, dc, eo, DeviceRunOptions{0, std::chrono::milliseconds(60'000), nullptr});
        double worst_abs = 0, worst_rel = 0;
        bool all_bitwise = true, ok = true;
        for (size_t i = 0; i < cpu.kept.size(); ++i) {
          const auto& [name, ct] = cpu.kept[i];
          const Tensor& gt = gpu.kept.at(i).second;
          if (gt.shape() != ct.shape() || gt.storage() != ct.storage()) throw std::runtime_error(name + ": shape or dtype differs");
          double ma = 0;
          bool bw = false;
          double rel = relError(ct, gt, ma, bw);
          worst_abs = std::max(worst_abs, ma), worst_rel = std::max(worst_rel, rel);
          all_bitwise = all_bitwise && bw;
          // Masks and integer outputs must agree exactly; floats within float accumulate-order noise.
          if (ct.storage() == Storage::U8 || ct.storage() == Storage::I64) ok = ok && bw;
          else ok = ok && rel <= (dtype == "float32" ? 1e-5 : 1e-12) && !std::isnan(ma);
        }
        if (!ok) ++failures;
        std::printf("| %s | %s | %s | %.3g | %.3g | %s |\n", c.op.c_str(), dtype.c_str(), path.c_str(), worst_abs, worst_rel,
                    ok ? (all_bitwise ? "ok (bitwise)" : "ok") : "FAIL");
      } catch (const std::exception& e) {
        ++failures;
        std::printf("| %s | %s | %s | - | - | ERROR: %s |\n", c.op.c_str(), dtype.c_str(), path.c_str(), e.what());
      }
    }
  }
  std::printf("\nkernel parity: %d of %d cases within tolerance\n", count - failures, count);
  return failures ? 1 : 0;
}
