// The vocab-parallel kernels against the serial ones on the full vocab and float64 references:
// c_embedding shards (their outputs summed, as the program's all-reduce does) against
// lookup_table_v2, c_softmax_with_cross_entropy on 2 and 4 ranks of the local backend against
// softmax_with_cross_entropy, their grads against finite differences; adamw's decoupled decay.
#include <chrono>
#include <memory>
#include <cmath>
#include <mutex>

#include "kernel_harness.h"
#include "runtime/communicator.h"
#include "runtime/local_backend.h"

using namespace kt;
using spopt::rt::Communicator;
using spopt::rt::KernelRing;

namespace {

Tensor idTensor(const Dims& shape, const std::vector<double>& v) { return fromDoubles(DType::Int64, shape, v); }

std::vector<double> vocabIds(int64_t n, int64_t bound) {
  std::uniform_int_distribution<int64_t> d(0, bound - 1);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(d(rng())));
  return v;
}

// Columns [c0, c0 + cols) of a row-major [rows, width] matrix.
std::vector<double> columnsOf(const std::vector<double>& m, int64_t width, int64_t c0, int64_t cols) {
  std::vector<double> out;
  for (size_t r = 0; r < m.size() / size_t(width); ++r)
    for (int64_t k = 0; k < cols; ++k) out.push_back(m[r * size_t(width) + size_t(c0 + k)]);
  return out;
}

// The rank's end of ring 0: one all-reduce of its communicator per call.
class TestRing : public KernelRing {
 public:
  TestRing(Communicator& comm, int64_t size, int64_t rank) : comm_(comm), size_(size), rank_(rank) {}
  int64_t size() const override { return size_; }
  int64_t position() const override { return rank_; }
  void allReduce(Tensor& buf, spopt::ReduceOp op) override {
    Tensor out(buf.dtype(), buf.shape());
    comm_.allReduce(0, buf, out, op, {"c_softmax_with_cross_entropy", rank_, 0, 0, "t.json", "/programs/0/blocks/0/ops/0"});
    buf = std::move(out);
  }

 private:
  Communicator& comm_;
  int64_t size_, rank_;
};

// Runs runners[r] as rank r of a ring of every rank, a thread each (the local backend).
void runOnRing(std::vector<std::unique_ptr<OpRunner>>& runners) {
  spopt::Job job;
  job.path = "t.json";
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < runners.size(); ++r) ranks.push_back(int64_t(r));
  job.groups.push_back(spopt::ProcessGroup{0, ranks, {}});
  auto backend = spopt::rt::makeLocalBackend({std::chrono::seconds(20)});
  backend->run(ranks, [&](int64_t rank, spopt::rt::CommFactory& comms) {
    auto comm = comms.make(job);
    TestRing ring(*comm, int64_t(ranks.size()), rank);
    runners[size_t(rank)]->runOn(ring, rank);
    return std::string();
  });
}

// Softmax cross-entropy over the last axis of [rows, classes], in double: softmax and per-row loss
// (0 where the label is `ignore`).
struct RefCE {
  std::vector<double> softmax, loss;
};
RefCE refCE(const std::vector<double>& x, int64_t classes, const std::vector<double>& label, int64_t ignore) {
  RefCE out;
  for (size_t r = 0; r < label.size(); ++r) {
    const double* row = x.data() + r * size_t(classes);
    double mx = row[0];
    for (int64_t k = 1; k < classes; ++k) mx = std::max(mx, row[k]);
    double s = 0;
    for (int64_t k = 0; k < classes; ++k) s += std::exp(row[k] - mx);
    for (int64_t k = 0; k < classes; ++k) out.softmax.push_back(std::exp(row[k] - mx) / s);
    int64_t l = int64_t(label[r]);
    out.loss.push_back(l == ignore ? 0.0 : std::log(s) - (row[l] - mx));
  }
  return out;
}

std::unique_ptr<OpRunner> shardCE(DType t, const Dims& lead, int64_t cols, const std::vector<double>& x, const std::vector<double>& label,
                 int64_t rank, int64_t nranks) {
  Dims s = lead, reduced = lead;
  s.push_back(cols);
  reduced.push_back(1);
  auto f = std::make_unique<OpRunner>("c_softmax_with_cross_entropy");
  f->in("Logits", {fromDoubles(t, s, x)}).in("Label", {idTensor(reduced, label)});
  f->out("Softmax", {Tensor(t, s)}).out("Loss", {Tensor(t, reduced)});
  f->attr("ring_id", "0").attr("rank", std::to_string(rank)).attr("nranks", std::to_string(nranks));
  return f;
}

}  // namespace

TEST_CASE("c_embedding shards summed over the ring are lookup_table_v2 on the whole table, their grads its rows", "[kernels]") {
  const int64_t width = 3, rows = 4;
  for (int64_t nranks : {2, 4})
    for (DType t : floatTypes()) {
      CAPTURE(nranks, spopt::dtypeName(t));
      const int64_t vocab = rows * nranks;
      std::vector<double> w = toDoubles(randomTensor(t, {vocab, width}));
      std::vector<double> id = vocabIds(6, vocab);
      std::vector<double> g = toDoubles(randomTensor(t, {2, 3, width}));
      OpRunner serial("lookup_table_v2");
      serial.in("Ids", {idTensor({2, 3}, id)}).in("W", {fromDoubles(t, {vocab, width}, w)}).out("Out", {Tensor(t, {2, 3, width})}).run();
      OpRunner serial_grad("lookup_table_v2_grad");
      serial_grad.in("Ids", {idTensor({2, 3}, id)}).in("W", {fromDoubles(t, {vocab, width}, w)}).in("Out@GRAD", {fromDoubles(t, {2, 3, width}, g)});
      serial_grad.out("W@GRAD", {Tensor(t, {vocab, width})}).run();
      std::vector<double> whole_grad = toDoubles(serial_grad.result("W@GRAD"));

      std::vector<double> summed(size_t(6 * width), 0.0);
      for (int64_t r = 0; r < nranks; ++r) {
        std::vector<double> shard(w.begin() + r * rows * width, w.begin() + (r + 1) * rows * width);
        std::string start = std::to_string(r * rows);
        OpRunner f("c_embedding");
        f.in("W", {fromDoubles(t, {rows, width}, shard)}).in("Ids", {idTensor({2, 3}, id)}).out("Out", {Tensor(t, {2, 3, width})});
        f.attr("start_index", start).attr("vocab_size", std::to_string(vocab)).run();
        std::vector<double> out = toDoubles(f.result("Out"));
        for (size_t i = 0; i < out.size(); ++i) summed[i] += out[i];

        OpRunner b("c_embedding_grad");
        b.in("W", {fromDoubles(t, {rows, width}, shard)}).in("Ids", {idTensor({2, 3}, id)}).in("Out@GRAD", {fromDoubles(t, {2, 3, width}, g)});
        b.out("W@GRAD", {Tensor(t, {rows, width})}).attr("start_index", start).run();
        requireClose(b.result("W@GRAD"), std::vector<double>(whole_grad.begin() + r * rows * width, whole_grad.begin() + (r + 1) * rows * width), 0);
        // The shard's lookup in double: rows it holds, zeros for the others.
        Forward fwd = [&](const std::map<std::string, std::vector<double>>& in) {
          std::vector<double> o;
          for (double d : id)
            for (int64_t j = 0; j < width; ++j) {
              int64_t local = int64_t(d) - r * rows;
              o.push_back(local >= 0 && local < rows ? in.at("W")[size_t(local * width + j)] : 0.0);
            }
          return o;
        };
        requireGradMatchesFD(fwd, {{"W", shard}}, "W", g, toDoubles(b.result("W@GRAD")), t == DType::Float64 ? 1e-6 : 1e-5);
      }
      // One shard holds each id, the others add zeros: the sum is exact.
      requireClose(serial.result("Out"), summed, 0);
    }
}

TEST_CASE("c_softmax_with_cross_entropy on 2 and 4 ranks is softmax_with_cross_entropy on the full vocab", "[kernels]") {
  const Dims lead{2, 3};
  const int64_t rows = 6, cols = 3;
  for (int64_t nranks : {2, 4})
    for (DType t : floatTypes()) {
      CAPTURE(nranks, spopt::dtypeName(t));
      const int64_t vocab = cols * nranks;
      std::vector<double> x = toDoubles(randomTensor(t, {rows, vocab}));
      for (double& v : x) v = toDoubles(fromDoubles(t, {1}, {v * 4}))[0];  // a wider spread, exact in t
      std::vector<double> label = vocabIds(rows, vocab);
      label[2] = -100;  // ignore_index
      label[4] = double(vocab - 1);  // the last shard's last class
      RefCE ref = refCE(x, vocab, label, -100);

      OpRunner serial("softmax_with_cross_entropy");
      serial.in("Logits", {fromDoubles(t, {2, 3, vocab}, x)}).in("Label", {idTensor({2, 3, 1}, label)});
      serial.out("Softmax", {Tensor(t, {2, 3, vocab})}).out("Loss", {Tensor(t, {2, 3, 1})}).run();

      std::vector<std::unique_ptr<OpRunner>> shards;
      for (int64_t r = 0; r < nranks; ++r) shards.push_back(shardCE(t, lead, cols, columnsOf(x, vocab, r * cols, cols), label, r, nranks));
      runOnRing(shards);
      std::vector<double> g = toDoubles(randomTensor(t, {rows, 1}));
      std::vector<double> grad(size_t(rows * vocab));
      for (int64_t r = 0; r < nranks; ++r) {
        CAPTURE(r);
        OpRunner& f = *shards[size_t(r)];
        requireClose(f.result("Loss"), ref.loss, tolFor(t));
        requireClose(f.result("Loss"), toDoubles(serial.result("Loss")), tolFor(t));
        requireClose(f.result("Softmax"), columnsOf(ref.softmax, vocab, r * cols, cols), tolFor(t));

        OpRunner b("c_softmax_with_cross_entropy_grad");
        b.in("Softmax", {f.result("Softmax")}).in("Label", {idTensor({2, 3, 1}, label)}).in("Loss@GRAD", {fromDoubles(t, {2, 3, 1}, g)});
        b.out("Logits@GRAD", {Tensor(t, {2, 3, cols})}).attr("rank", std::to_string(r)).attr("nranks", std::to_string(nranks)).run();
        std::vector<double> part = toDoubles(b.result("Logits@GRAD"));
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t k = 0; k < cols; ++k) grad[size_t(i * vocab + r * cols + k)] = part[size_t(i * cols + k)];
      }
      OpRunner serial_grad("softmax_with_cross_entropy_grad");
      serial_grad.in("Label", {idTensor({2, 3, 1}, label)}).in("Softmax", {serial.result("Softmax")}).in("Loss@GRAD", {fromDoubles(t, {2, 3, 1}, g)});
      serial_grad.out("Logits@GRAD", {Tensor(t, {2, 3, vocab})}).run();
      requireClose(serial_grad.result("Logits@GRAD"), grad, tolFor(t));
      Forward fwd = [&](const std::map<std::string, std::vector<double>>& in) { return refCE(in.at("X"), vocab, label, -100).loss; };
      requireGradMatchesFD(fwd, {{"X", x}}, "X", g, grad, t == DType::Float64 ? 1e-6 : 1e-5);
      for (int64_t k = 0; k < vocab; ++k) CHECK(grad[size_t(2 * vocab + k)] == 0.0);  // the ignored row
    }
}

TEST_CASE("c_softmax_with_cross_entropy refuses a missing ring, a label past the vocab and a rank off its ring position", "[kernels]") {
  std::vector<double> x = toDoubles(randomTensor(DType::Float32, {2, 3}));
  auto alone = shardCE(DType::Float32, {2}, 3, x, {0, 1}, 0, 2);
  REQUIRE_THROWS_WITH(alone->run(), Catch::Contains("needs its ring"));

  std::vector<std::unique_ptr<OpRunner>> past;
  for (int64_t r = 0; r < 2; ++r) past.push_back(shardCE(DType::Float32, {2}, 3, x, {0, 6}, r, 2));
  REQUIRE_THROWS_WITH(runOnRing(past), Catch::Contains("Label[1] = 6 is outside the 6 classes"));

  std::vector<std::unique_ptr<OpRunner>> swapped;
  for (int64_t r = 0; r < 2; ++r) swapped.push_back(shardCE(DType::Float32, {2}, 3, x, {0, 1}, 1 - r, 2));
  REQUIRE_THROWS_WITH(runOnRing(swapped), Catch::Contains("differ from position"));
}

TEST_CASE("adamw decays the parameter by lr x lr_ratio x coeff, then takes adam's step, without with_decay it is adam", "[kernels]") {
  for (DType t : floatTypes()) {
    CAPTURE(spopt::dtypeName(t));
    const Dims s{3, 2};
    std::vector<double> p = toDoubles(randomTensor(t, s)), g = toDoubles(randomTensor(t, s)), m1 = toDoubles(randomTensor(t, s));
    std::vector<double> m2 = toDoubles(randomTensor(t, s));
    for (double& v : m2) v = std::fabs(v);
    const double lr = 0.01, ratio = 0.5, coeff = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, pow1 = 0.81, pow2 = 0.998;
    auto run = [&](const char* type, bool decay) {
      OpRunner r(type);
      r.in("Param", {fromDoubles(t, s, p)}).in("Grad", {fromDoubles(t, s, g)}).in("Moment1", {fromDoubles(t, s, m1)});
      r.in("Moment2", {fromDoubles(t, s, m2)}).in("LearningRate", {fromDoubles(t, {1}, {lr})});
      r.in("Beta1Pow", {fromDoubles(t, {1}, {pow1})}).in("Beta2Pow", {fromDoubles(t, {1}, {pow2})});
      r.out("ParamOut", {Tensor(t, s)}).out("Moment1Out", {Tensor(t, s)}).out("Moment2Out", {Tensor(t, s)});
      r.out("Beta1PowOut", {Tensor(t, {1})}).out("Beta2PowOut", {Tensor(t, {1})});
      r.attr("beta1", "0.9").attr("beta2", "0.999").attr("epsilon", "1e-8");
      if (std::string_view(type) == "adamw") r.attr("lr_ratio", decay ? "0.5" : "1.0").attr("coeff", "0.1").attr("with_decay", decay ? "true" : "false");
      r.run();
      return std::vector<double>(toDoubles(r.result("ParamOut")));
    };
    std::vector<double> want;
    double rate = lr * ratio, lr_t = rate * std::sqrt(1 - pow2) / (1 - pow1);
    for (size_t i = 0; i < p.size(); ++i) {
      double a = b1 * m1[i] + (1 - b1) * g[i], b = b2 * m2[i] + (1 - b2) * g[i] * g[i];
      want.push_back(p[i] * (1 - rate * coeff) - lr_t * a / (std::sqrt(b) + eps * std::sqrt(1 - pow2)));
    }
    std::vector<double> decayed = run("adamw", true);
    requireClose(fromDoubles(DType::Float64, s, decayed), want, tolFor(t));
    CHECK(run("adamw", false) == run("adam", false));  // bitwise: the decay step is skipped
  }
}
