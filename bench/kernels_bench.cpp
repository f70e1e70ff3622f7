// Kernel micro-benchmark (scripts/bench-kernels.sh): the replay kernels of the vision (ResNet)
// and language (GPT) jobs, best of N runs, each against a bound measured in this binary:
//   GEMM-shaped kernels (conv2d, mul, matmul_v2, + grads): the same OpenBLAS GEMM calls alone
//     (shapes and count the kernel makes), so the ratio is the kernel's overhead over its GEMMs;
//   the rest: the bytes the kernel must read and write at least, at the bandwidth of STREAM's
//     scale loop (b = q a over 256 MiB, far larger than the caches: ordinary loads and stores, as
//     a kernel's own loops make them), timed run by run beside the kernel so that both see the
//     same memory system (this VM's bandwidth moves by a third within a minute). memcpy's bandwidth is
//     printed for reference: its non-temporal stores skip the read a kernel's stores pay.
// Printed as a markdown table: ms, achieved rate, bound ms, ratio = ms / bound ms (goal <= 2).
// Single rank, OpenBLAS threads as the environment says.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ops/op_view.h"
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
std::string g_kernel;  // --kernel: only the rows whose name (kernel + note) contains it
bool g_digest = false;  // --digest 1: print a hash of each kernel's outputs (same bits before and after a change)
double g_copy_gbs = 0;  // measured memcpy bandwidth, bytes read + written per ns

size_t elemSize() { return g_type == DType::Float64 ? 8 : 4; }

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
Tensor empty(std::vector<int64_t> shape, DType t = DType::Float32) { return Tensor(t == DType::Float32 ? g_type : t, std::move(shape)); }
// int64 values i * 7919 mod `bound`: spread over [0, bound).
Tensor indices(std::vector<int64_t> shape, int64_t bound) {
  Tensor t(DType::Int64, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7919) % bound;
  return t;
}

std::string dims(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

// Warm-up once, then the best of g_reps runs (seconds).
double best(const std::function<void()>& f) {
  f();
  double b = 1e30;
  for (int r = 0; r < g_reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    b = std::min(b, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return b;
}

// The best time of g_reps runs of `type`'s kernel on `io` (timed false: one run, untimed, to make
// another row's inputs).
double timeKernel(const char* type, BenchIO& io, const std::vector<std::pair<const char*, const char*>>& attrs,
                  bool timed = true) {
  Job job;
  Op op = makeOp(job, type);
  for (auto& [slot, ts] : io.ins) addInput(op, job, slot, std::vector<std::string_view>(ts.size(), "in"));
  for (auto& [slot, ts] : io.outs) addOutput(op, job, slot, std::vector<std::string_view>(ts.size(), "out"));
  for (auto& [k, v] : attrs) op.attrs.setRaw(job.arena, k, v);
  KernelFn fn = findKernel(type);
  if (!fn) {
    std::fprintf(stderr, "no kernel for %s\n", type);
    std::exit(2);
  }
  OpView view(op);
  KernelContext c{view, 0, 1, io};
  if (!timed) {
    fn(c);
    return 0;
  }
  double s = best([&] { fn(c); });
  if (g_digest) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the outputs' bytes, slot by slot
    for (auto& [slot, ts] : io.outs)
      for (const Tensor& t : ts) {
        const auto* b = static_cast<const unsigned char*>(t.raw());
        for (size_t i = 0, n = t.bytes(); i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
      }
    std::fprintf(stderr, "digest %s %016llx\n", type, (unsigned long long)h);
  }
  return s;
}

// One GEMM call of a kernel: C (m x n) = op(A) op(B), k deep.
struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
};

// The calls alone, on scratch operands (what OpenBLAS takes for them; the bound of the kernel).
double timeGemms(const std::vector<Gemm>& calls, double* flops) {
  int64_t a = 0, b = 0, c = 0;
  *flops = 0;
  for (const Gemm& g : calls) {
    a = std::max(a, g.m * g.k), b = std::max(b, g.k * g.n), c = std::max(c, g.m * g.n);
    *flops += 2.0 * double(g.m) * double(g.n) * double(g.k);
  }
  Tensor ta = filled({a}), tb = filled({b}), tc = empty({c});
  return best([&] {
    for (const Gemm& g : calls) {
      if (g_type == DType::Float64)
        blasGemm(g.ta, g.tb, g.m, g.n, g.k, ta.data<double>(), g.ta ? g.m : g.k, tb.data<double>(), g.tb ? g.k : g.n, 0.0,
                 tc.data<double>(), g.n);
      else
        blasGemm(g.ta, g.tb, g.m, g.n, g.k, ta.data<float>(), g.ta ? g.m : g.k, tb.data<float>(), g.tb ? g.k : g.n, 0.0f,
                 tc.data<float>(), g.n);
    }
  });
}

void printRow(const std::string& kernel, const std::string& shape, double s, const std::string& rate, const std::string& bound,
              double bound_s) {
  double ratio = s / bound_s;
  std::printf("| %s | %s | %.3f | %s | %s | %.3f | %.2f%s |\n", kernel.c_str(), shape.c_str(), s * 1e3, rate.c_str(), bound.c_str(),
              bound_s * 1e3, ratio, ratio > 2.0 ? " **>2**" : "");
}

char* fmt(const char* f, double v) {
  static char buf[8][64];
  static int i = 0;
  char* b = buf[i++ % 8];
  std::snprintf(b, 64, f, v);
  return b;
}

bool skipped(const char* type, const std::string& note) {
  return !g_kernel.empty() && (std::string(type) + note).find(g_kernel) == std::string::npos;
}

// A GEMM-shaped kernel against its GEMM calls alone.
void gemmRow(const char* type, const std::string& note, const std::string& shape, BenchIO& io,
             const std::vector<std::pair<const char*, const char*>>& attrs, const std::vector<Gemm>& calls) {
  if (skipped(type, note)) return;
  double s = timeKernel(type, io, attrs);
  double flops = 0, g = timeGemms(calls, &flops);
  printRow(std::string(type) + note, shape, s, std::string(fmt("%.1f", flops / s / 1e9)) + " GFLOP/s",
           std::string("sgemm ") + fmt("%.1f", flops / g / 1e9) + " GFLOP/s", g);
}

// STREAM's scale loop over 256 MiB (half read, half written), compiled for the vector unit as the
// kernels are (-O3 for this file: see CMakeLists.txt).
struct StreamScale {
  static constexpr double kBytes = double(size_t(256) << 20);
  std::vector<float> x, y;
  float q = 1.0f;
  StreamScale() : x(size_t(kBytes / 8), 1.0f), y(x.size(), 0.0f) {}
  void run() {
    const float* __restrict in = x.data();
    float* __restrict out = y.data();
    const float scale = q;
    for (size_t i = 0, n = x.size(); i < n; ++i) out[i] = scale * in[i];
  }
};

// A memory-bound kernel against `elements` elements read + written at StreamScale's bandwidth: the
// two run in turn, the best of g_reps runs each.
void memRow(const char* type, const std::string& note, const std::string& shape, BenchIO& io,
            const std::vector<std::pair<const char*, const char*>>& attrs, double elements) {
  if (skipped(type, note)) return;
  double bytes = elements * double(elemSize());
  static StreamScale probe;
  double kernel_s = 1e30, stream_s = 1e30;
  for (int round = 0; round < 2; ++round) {  // each call is itself a best of g_reps
    kernel_s = std::min(kernel_s, timeKernel(type, io, attrs));
    stream_s = std::min(stream_s, best([&] { probe.run(); }));
  }
  const double bandwidth = StreamScale::kBytes / stream_s;
  printRow(std::string(type) + note, shape, kernel_s, std::string(fmt("%.2f", bytes / kernel_s / 1e9)) + " GB/s",
           std::string("stream ") + fmt("%.1f", bandwidth / 1e9) + " GB/s", bytes / bandwidth);
}

// Bytes read + written per second by memcpy of a buffer far larger than the caches.
double measureCopy() {
  const size_t n = size_t(128) << 20;
  std::vector<char> a(n, 1), b(n, 2);
  double s = best([&] { std::memcpy(b.data(), a.data(), n); });
  return 2.0 * double(n) / s / 1e9;
}

}  // namespace

void benchVision(int64_t batch);
void benchLanguage(int64_t tokens, int64_t hidden, int64_t heads, int64_t seq, int64_t vocab);

int main(int argc, char** argv) {
  int64_t tokens = 4096, hidden = 1024, heads = 16, seq = 128, batch = 4, vocab = 32000;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int64_t v = std::atoll(argv[i + 1]);
    if (a == "--tokens") tokens = v;
    else if (a == "--hidden") hidden = v;
    else if (a == "--seq") seq = v;
    else if (a == "--batch") batch = v;
    else if (a == "--vocab") vocab = v;
    else if (a == "--reps") g_reps = int(v);
    else if (a == "--only") only = argv[i + 1];
    else if (a == "--kernel") g_kernel = argv[i + 1];
    else if (a == "--digest") g_digest = v != 0;
    else if (a == "--dtype") g_type = std::string(argv[i + 1]) == "float64" ? DType::Float64 : DType::Float32;
    else {
      std::fprintf(stderr,
                   "usage: %s [--batch N] [--tokens T] [--hidden H] [--seq S] [--vocab V] [--reps N] [--only vision|language] "
                   "[--dtype float32|float64] [--kernel NAME] [--digest 1]\n",
                   argv[0]);
      return 2;
    }
  }
  g_copy_gbs = measureCopy();
  std::printf("OpenBLAS core %s (%d threads), %s, best of %d; memcpy %.1f GB/s (read + written; for reference)\n\n", blas().core.c_str(),
              blas().threads, std::string(dtypeName(g_type)).c_str(), g_reps, g_copy_gbs);
  std::printf("| kernel | shape | ms | rate | bound | bound ms | ratio |\n| --- | --- | ---: | ---: | --- | ---: | ---: |\n");
  if (only.empty() || only == "vision") benchVision(batch);
  if (only.empty() || only == "language") benchLanguage(tokens, hidden, heads, seq, vocab);
  return 0;
}

// ResNet-50's shapes at batch N: a 3x3 and a 1x1 convolution of stage 2, the stem's 7x7 stride 2,
// the stem's max pool, a stage-2 batch norm, the classifier's mul and the momentum update.
void benchVision(int64_t N) {
  const std::vector<std::pair<const char*, const char*>> conv3 = {{"strides", "[1,1]"}, {"paddings", "[1,1]"}};
  {
    BenchIO io;
    io.ins["Input"] = {filled({N, 64, 56, 56})};
    io.ins["Filter"] = {filled({64, 64, 3, 3})};
    io.outs["Output"] = {empty({N, 64, 56, 56})};
    gemmRow("conv2d", " 3x3", dims({N, 64, 56, 56}), io, conv3, std::vector<Gemm>(size_t(N), {false, false, 64, 3136, 576}));
    BenchIO g;
    g.ins["Input"] = {filled({N, 64, 56, 56})};
    g.ins["Filter"] = {filled({64, 64, 3, 3})};
    g.ins["Output@GRAD"] = {filled({N, 64, 56, 56})};
    g.outs["Input@GRAD"] = {empty({N, 64, 56, 56})};
    g.outs["Filter@GRAD"] = {empty({64, 64, 3, 3})};
    std::vector<Gemm> calls;
    for (int64_t n = 0; n < N; ++n) calls.insert(calls.end(), {{false, true, 64, 576, 3136}, {true, false, 576, 3136, 64}});
    gemmRow("conv2d_grad", " 3x3", dims({N, 64, 56, 56}), g, conv3, calls);
  }
  {
    BenchIO io;
    io.ins["Input"] = {filled({N, 256, 56, 56})};
    io.ins["Filter"] = {filled({64, 256, 1, 1})};
    io.outs["Output"] = {empty({N, 64, 56, 56})};
    gemmRow("conv2d", " 1x1", dims({N, 256, 56, 56}), io, {}, std::vector<Gemm>(size_t(N), {false, false, 64, 3136, 256}));
  }
  {
    BenchIO io;
    io.ins["Input"] = {filled({N, 3, 224, 224})};
    io.ins["Filter"] = {filled({64, 3, 7, 7})};
    io.outs["Output"] = {empty({N, 64, 112, 112})};
    gemmRow("conv2d", " 7x7/2", dims({N, 3, 224, 224}), io, {{"strides", "[2,2]"}, {"paddings", "[3,3]"}},
            std::vector<Gemm>(size_t(N), {false, false, 64, 12544, 147}));
  }
  {
    const std::vector<std::pair<const char*, const char*>> pool = {
        {"pooling_type", "\"max\""}, {"ksize", "[3,3]"}, {"strides", "[2,2]"}, {"paddings", "[1,1]"}};
    const double in = double(N * 64 * 112 * 112), out = double(N * 64 * 56 * 56);
    BenchIO io;
    io.ins["X"] = {filled({N, 64, 112, 112})};
    io.outs["Out"] = {empty({N, 64, 56, 56})};
    memRow("pool2d", " max 3x3/2", dims({N, 64, 112, 112}), io, pool, in + out);
    // Out is the forward's output of X, as in training, so every window has its winner (an Out
    // of other values would leave most windows without one: a case training never runs).
    timeKernel("pool2d", io, pool, false);
    BenchIO g;
    g.ins["X"] = io.ins["X"];
    g.ins["Out"] = io.outs["Out"];
    g.ins["Out@GRAD"] = {filled({N, 64, 56, 56})};
    g.outs["X@GRAD"] = {empty({N, 64, 112, 112})};
    memRow("pool2d_grad", " max 3x3/2", dims({N, 64, 112, 112}), g, pool, 2 * in + 2 * out);
  }
  {
    std::vector<int64_t> x{N, 256, 56, 56};
    const double n = double(N * 256 * 56 * 56);
    BenchIO io;
    io.ins["X"] = {filled(x)};
    for (const char* s : {"Scale", "Bias", "Mean", "Variance"}) io.ins[s] = {filled({256})};
    io.outs["Y"] = {empty(x)};
    for (const char* s : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}) io.outs[s] = {empty({256})};
    memRow("batch_norm", "", dims(x), io, {}, 2 * n);
    BenchIO g;
    g.ins["X"] = {filled(x)};
    g.ins["Y@GRAD"] = {filled(x)};
    for (const char* s : {"Scale", "Bias", "SavedMean", "SavedVariance"}) g.ins[s] = {filled({256})};
    g.outs["X@GRAD"] = {empty(x)};
    g.outs["Scale@GRAD"] = {empty({256})};
    g.outs["Bias@GRAD"] = {empty({256})};
    memRow("batch_norm_grad", "", dims(x), g, {}, 3 * n);
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({N * 32, 2048})};
    io.ins["Y"] = {filled({2048, 1000})};
    io.outs["Out"] = {empty({N * 32, 1000})};
    gemmRow("mul", "", dims({N * 32, 2048}) + " @ 2048x1000", io, {}, {{false, false, N * 32, 1000, 2048}});
    BenchIO g;
    g.ins["X"] = {filled({N * 32, 2048})};
    g.ins["Y"] = {filled({2048, 1000})};
    g.ins["Out@GRAD"] = {filled({N * 32, 1000})};
    g.outs["X@GRAD"] = {empty({N * 32, 2048})};
    g.outs["Y@GRAD"] = {empty({2048, 1000})};
    gemmRow("mul_grad", "", dims({N * 32, 2048}) + " @ 2048x1000", g, {},
            {{false, true, N * 32, 2048, 1000}, {true, false, 2048, 1000, N * 32}});
  }
  {
    std::vector<int64_t> p{512, 512, 3, 3};
    const double n = double(512 * 512 * 9);
    BenchIO io;
    io.ins["Param"] = {filled(p)};
    io.ins["Grad"] = {filled(p)};
    io.ins["Velocity"] = {filled(p)};
    io.ins["LearningRate"] = {filled({1})};
    io.outs["ParamOut"] = {empty(p)};
    io.outs["VelocityOut"] = {empty(p)};
    memRow("momentum", "", dims(p), io, {{"mu", "0.9"}}, 5 * n);
  }
}

// GPT's shapes: T tokens of width H; the embedding table and the classifier have V rows.
void benchLanguage(int64_t T, int64_t H, int64_t heads, int64_t seq, int64_t V) {
  const double n = double(T * H);
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.ins["Y"] = {filled({H, H})};
    io.outs["Out"] = {empty({T, H})};
    gemmRow("matmul_v2", "", dims({T, H}) + " @ " + dims({H, H}), io, {}, {{false, false, T, H, H}});
  }
  {
    BenchIO io;
    io.ins["Ids"] = {indices({T}, V)};
    io.ins["W"] = {filled({V, H})};
    io.outs["Out"] = {empty({T, H})};
    memRow("lookup_table_v2", "", dims({T}) + " of " + dims({V, H}), io, {}, 2 * n);
    BenchIO g;
    g.ins["Ids"] = {indices({T}, V)};
    g.ins["W"] = {filled({V, H})};
    g.ins["Out@GRAD"] = {filled({T, H})};
    g.outs["W@GRAD"] = {empty({V, H})};
    memRow("lookup_table_v2_grad", "", dims({T}) + " of " + dims({V, H}), g, {}, n + double(V * H));
  }
  {
    const int64_t rows = std::max<int64_t>(1, T / 8);  // a vocabulary-wide softmax over fewer rows
    const double m = double(rows * V);
    BenchIO io;
    io.ins["Logits"] = {filled({rows, V})};
    io.ins["Label"] = {indices({rows, 1}, V)};
    io.outs["Softmax"] = {empty({rows, V})};
    io.outs["Loss"] = {empty({rows, 1})};
    memRow("softmax_with_cross_entropy", "", dims({rows, V}), io, {}, 2 * m);
    BenchIO g;
    g.ins["Label"] = {indices({rows, 1}, V)};
    g.ins["Softmax"] = {filled({rows, V})};
    g.ins["Loss@GRAD"] = {filled({rows, 1})};
    g.outs["Logits@GRAD"] = {empty({rows, V})};
    memRow("softmax_with_cross_entropy_grad", "", dims({rows, V}), g, {}, 2 * m);
  }
  {
    BenchIO p;
    p.ins["Param"] = {filled({H, 4 * H})};
    p.ins["Grad"] = {filled({H, 4 * H})};
    p.ins["Moment1"] = {filled({H, 4 * H})};
    p.ins["Moment2"] = {filled({H, 4 * H})};
    for (const char* s : {"LearningRate", "Beta1Pow", "Beta2Pow"}) p.ins[s] = {filled({1})};
    p.outs["ParamOut"] = {empty({H, 4 * H})};
    p.outs["Moment1Out"] = {empty({H, 4 * H})};
    p.outs["Moment2Out"] = {empty({H, 4 * H})};
    p.outs["Beta1PowOut"] = {empty({1})};
    p.outs["Beta2PowOut"] = {empty({1})};
    memRow("adam", "", dims({H, 4 * H}), p, {}, 7.0 * double(H * 4 * H));
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.ins["Scale"] = {filled({H})};
    io.ins["Bias"] = {filled({H})};
    io.outs["Y"] = {empty({T, H})};
    io.outs["Mean"] = {empty({T})};
    io.outs["Variance"] = {empty({T})};
    memRow("layer_norm", "", dims({T, H}), io, {}, 2 * n);
  }
  {
    std::vector<int64_t> scores{std::max<int64_t>(1, T / seq), heads, seq, seq};
    double m = double(scores[0] * heads * seq * seq);
    BenchIO io;
    io.ins["X"] = {filled(scores)};
    io.outs["Out"] = {empty(scores)};
    memRow("softmax", "", dims(scores), io, {}, 2 * m);
  }
  {
    BenchIO io;
    io.ins["X"] = {filled({T, H})};
    io.outs["Out"] = {empty({T, H})};
    memRow("gelu", " (tanh)", dims({T, H}), io, {{"approximate", "true"}}, 2 * n);
  }
}
