// Kernel micro-benchmark (scripts/bench-kernels.sh): each kernel on transformer-sized tensors,
// best of N runs, as a markdown table with the bytes it must move per second; the first row is
// the GEMM of a linear layer in GFLOP/s. Single rank, OpenBLAS threads as the environment says.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/kernels/blas.h"
#include "runtime/kernels/kernels.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

struct BenchIO : KernelIO {
  std::map<std::string, std::vector<Tensor>, std::less<>> ins, outs;
  const Tensor* input(std::string_view s, size_t i) const override {
    auto it = ins.find(s);
    return it == ins.end() || i >= it->second.size() ? nullptr : &it->second[i];
  }
  size_t inputCount(std::string_view s) const override {
    auto it = ins.find(s);
    return it == ins.end() ? 0 : it->second.size();
  }
  Tensor* output(std::string_view s, size_t i) override {
    auto it = outs.find(s);
    return it == outs.end() || i >= it->second.size() ? nullptr : &it->second[i];
  }
  size_t outputCount(std::string_view s) const override {
    auto it = outs.find(s);
    return it == outs.end() ? 0 : it->second.size();
  }
};

DType g_type = DType::Float32;
int g_reps = 5;

// Deterministic non-zero values in [0.1, 0.9].
Tensor filled(std::vector<int64_t> shape) {
  Tensor t(g_type, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = 0.1 + 0.8 * double((uint64_t(i) * 2654435761u) % 1000) / 1000.0;
    if (t.storage() == Storage::F32) t.data<float>()[i] = float(v);
    else t.data<double>()[i] = v;
  }
  return t;
}
Tensor empty(std::vector<int64_t> shape, DType t = DType::Float32) {
  return Tensor(t == DType::Float32 ? g_type : t, std::move(shape));
}

std::string dims(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

// Runs the kernel once to warm up, then keeps the best of g_reps runs (seconds).
double timeKernel(const char* type, BenchIO& io, const std::vector<std::pair<const char*, const char*>>& attrs) {
  Job job;
  Op op = makeOp(job, type);
  for (auto& [slot, ts] : io.ins) addInput(op, job, slot, std::vector<std::string_view>(ts.size(), "in"));
  for (auto& [slot, ts] : io.outs) addOutput(op, job, slot, std::vector<std::string_view>(ts.size(), "out"));
  for (auto& [k, v] : attrs) op.attrs.setRaw(job.arena, k, v);
  KernelFn fn = findKernel(type);
  KernelContext c{op, 0, 1, io};
  fn(c);
  double best = 1e30;
  for (int r = 0; r < g_reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn(c);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// bytes: the tensor bytes the kernel must read and write (counted in elements x element size).
void row(const char* type, const std::vector<int64_t>& shape, BenchIO& io,
         const std::vector<std::pair<const char*, const char*>>& attrs, double elements_moved, const char* note = "") {
  double s = timeKernel(type, io, attrs);
  double bytes = elements_moved * double(dtypeSize(g_type == DType::Float64 ? DType::Float64 : DType::Float32));
  std::printf("| %s%s | %s | %.3f | %.2f GB/s |\n", type, note, dims(shape).c_str(), s * 1e3, bytes / s / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 4096, hidden = 1024, heads = 16, seq = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int64_t v = std::atoll(argv[i + 1]);
    if (a == "--tokens") tokens = v;
    else if (a == "--hidden") hidden = v;
    else if (a == "--seq") seq = v;
    else if (a == "--reps") g_reps = int(v);
    else if (a == "--dtype") g_type = std::string(argv[i + 1]) == "float64" ? DType::Float64 : DType::Float32;
    else {
      std::fprintf(stderr, "usage: %s [--tokens T] [--hidden H] [--seq S] [--reps N] [--dtype float32|float64]\n", argv[0]);
      return 2;
    }
  }
  const int64_t T = tokens, H = hidden, B = std::max<int64_t>(1, tokens / seq);
  std::printf("OpenBLAS core %s, %s, tokens %lld, hidden %lld, best of %d\n\n", blas().core.c_str(),
              std::string(dtypeName(g_type)).c_str(), (long long)T, (long long)H, g_reps);
  std::printf("| kernel | shape | ms | rate |\n| --- | --- | ---: | ---: |\n");
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.ins["Y"] = {filled({H, H})};
    io.outs["Out"] = {empty({T, H})};
    double s = timeKernel("matmul_v2", io, {});
    std::printf("| matmul_v2 | %s @ %s | %.3f | %.1f GFLOP/s |\n", dims({T, H}).c_str(), dims({H, H}).c_str(), s * 1e3,
                2.0 * double(T) * double(H) * double(H) / s / 1e9);
  }
  const double n = double(T * H);
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.ins["Y"] = {filled({H})};
    io.outs["Out"] = {empty({T, H})};
    row("elementwise_add", {T, H}, io, {}, 2 * n, " (bias)");
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.ins["Y"] = {filled({H})};
    io.ins["Out@GRAD"] = {filled({T, H})};
    io.outs["X@GRAD"] = {empty({T, H})};
    io.outs["Y@GRAD"] = {empty({H})};
    row("elementwise_add_grad", {T, H}, io, {}, 2 * n, " (bias)");
  }
  for (const char* approx : {"false", "true"}) {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.outs["Out"] = {empty({T, H})};
    row("gelu", {T, H}, io, {{"approximate", approx}}, 2 * n, approx[0] == 't' ? " (tanh)" : " (erf)");
    BenchIO g;
    g.ins["X"] = {filled({T, H})};
    g.ins["Out@GRAD"] = {filled({T, H})};
    g.outs["X@GRAD"] = {empty({T, H})};
    row("gelu_grad", {T, H}, g, {{"approximate", approx}}, 3 * n, approx[0] == 't' ? " (tanh)" : " (erf)");
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.ins["Scale"] = {filled({H})};
    io.ins["Bias"] = {filled({H})};
    io.outs["Y"] = {empty({T, H})};
    io.outs["Mean"] = {empty({T})};
    io.outs["Variance"] = {empty({T})};
    row("layer_norm", {T, H}, io, {}, 2 * n);
    BenchIO g;
    g.ins["X"] = {filled({T, H})};
    g.ins["Scale"] = {filled({H})};
    g.ins["Mean"] = {filled({T})};
    g.ins["Variance"] = {filled({T})};
    g.ins["Y@GRAD"] = {filled({T, H})};
    g.outs["X@GRAD"] = {empty({T, H})};
    g.outs["Scale@GRAD"] = {empty({H})};
    g.outs["Bias@GRAD"] = {empty({H})};
    row("layer_norm_grad", {T, H}, g, {}, 3 * n);
  }
  {
    std::vector<int64_t> scores{B, heads, seq, seq};
    double m = double(B * heads * seq * seq);
    BenchIO io;
    io.ins["X"] = {filled(scores)};
    io.outs["Out"] = {empty(scores)};
    row("softmax", scores, io, {}, 2 * m);
    BenchIO g;
    g.ins["Out"] = {filled(scores)};
    g.ins["Out@GRAD"] = {filled(scores)};
    g.outs["X@GRAD"] = {empty(scores)};
    row("softmax_grad", scores, g, {}, 3 * m);
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({B, seq, heads, H / heads})};
    io.outs["Out"] = {empty({B, heads, seq, H / heads})};
    row("transpose2", {B, seq, heads, H / heads}, io, {{"axis", "[0,2,1,3]"}}, 2 * n, " (heads)");
    BenchIO t;
    t.ins["X"] = {filled({T, H})};
    t.outs["Out"] = {empty({H, T})};
    row("transpose2", {T, H}, t, {{"axis", "[1,0]"}}, 2 * n, " (2-D)");
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.outs["Out"] = {empty({T, H})};
    io.outs["Mask"] = {empty({T, H}, DType::UInt8)};
    row("dropout", {T, H}, io, {{"dropout_prob", "0.1"}, {"dropout_implementation", "\"upscale_in_train\""}}, 2.25 * n);
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.outs["Out"] = {empty({H})};
    row("reduce_sum", {T, H}, io, {{"dim", "[0]"}}, n, " (dim 0)");
    BenchIO s;
    s.ins["X"] = {filled({T, H}), filled({T, H})};
    s.outs["Out"] = {empty({T, H})};
    row("sum", {T, H}, s, {}, 3 * n, " (2 inputs)");
    BenchIO p;
    p.ins["Param"] = {filled({T, H})};
    p.ins["LearningRate"] = {filled({1})};
    p.ins["Grad"] = {filled({T, H})};
    p.outs["ParamOut"] = {empty({T, H})};
    row("sgd", {T, H}, p, {}, 3 * n);
  }
  return 0;
}
