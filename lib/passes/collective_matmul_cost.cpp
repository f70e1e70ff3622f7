// See collective_matmul_cost.h.
#include "passes/collective_matmul_cost.h"

#include "ops/op_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace spopt {
namespace {

double bytesOf(const Var* v) { return v ? double(v->byteSize().value_or(0)) : 0; }

// A copy of `bytes` (read and written once) as a compute op.
double copySeconds(double bytes, const HardwareModel& m) { return m.op_overhead_s + 2 * bytes / m.mem_bw; }

std::string us(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  return b;
}

// The two streams of a site's ring, in program order: the comm stream runs the exchanges in turn,
// the compute stream its ops in turn, each op once the exchange it reads (if any) has landed and
// each reduce-scatter exchange once the sums it sends are made.
struct RingStreams {
  explicit RingStreams(int64_t exchanges) { landed.reserve(size_t(exchanges)); }
  std::vector<double> landed;  // by exchange
  double compute = 0, comm_free = 0, work = 0;
  void run(double seconds, int64_t waits_for = -1) {
    if (waits_for >= 0) compute = std::max(compute, landed[size_t(waits_for)]);
    compute += seconds;
    work += seconds;
  }
  // An exchange whose sends are made at `ready` (0: before the site).
  void exchange(double seconds, double ready) {
    comm_free = std::max(comm_free, ready) + seconds;
    landed.push_back(comm_free);
  }
};

// All-gather form (collective_matmul_rewrite.cpp): exchange (s, j), s = 1..a, brings piece j of
// chunk p-s (and of p+s while s <= b); the first matmul's step s multiplies them once it has landed,
// the other matmuls' after it. `gemms`: one piece GEMM per matmul of the site, in program order;
// `comm(k)`: an exchange carrying k pieces.
template <class Comm>
RingStreams gatherPipeline(const RingShape& r, int64_t a, int64_t b, const std::vector<double>& gemms, Comm comm) {
  RingStreams s(a * r.chunks);
  for (int64_t step = 1; step <= a; ++step)
    for (int64_t j = 0; j < r.chunks; ++j) s.exchange(comm(step <= b ? 2 : 1), 0);
  for (double g : gemms)
    for (int64_t step = 0; step <= a; ++step)
      for (int64_t j = 0; j < r.chunks; ++j)
        for (int dir = 0; dir < (step >= 1 && step <= b ? 2 : 1); ++dir) s.run(g, step == 0 ? -1 : (step - 1) * r.chunks + j);
  return s;
}

// Reduce-scatter form: step k = 0..a-1, piece j: the partial of the main chain's chunk (and from
// step a-b on the other way's), then each plus the sum received at step k-1, and exchange (k, j)
// sends them; last, the own chunk's partial plus what each chain brought.
template <class Comm>
RingStreams scatterPipeline(const RingShape& r, int64_t a, int64_t b, double gemm, double add, Comm comm) {
  RingStreams s(a * r.chunks);
  const int64_t n = r.chunks;
  for (int64_t k = 0; k < a; ++k)
    for (int64_t j = 0; j < n; ++j) {
      bool second = k >= a - b;
      s.run(second ? 2 * gemm : gemm);
      if (k > 0) s.run(add, (k - 1) * n + j);
      if (second && k > a - b) s.run(add, (k - 1) * n + j);
      s.exchange(comm(second ? 2 : 1), s.compute);
    }
  for (int64_t j = 0; j < n; ++j) {
    s.run(gemm);
    s.run(add, (a - 1) * n + j);
    if (b > 0) s.run(add);
  }
  return s;
}

// Reduce-scatter form, direct: exchange (k, j), k = 1..a, sends the partials made just before it
// (one a way); the pieces received at step k are summed after step k+1's partials, the first
// piece received needing no add (it is the accumulator); last the own partial and its add.
template <class Comm>
RingStreams directPipeline(const RingShape& r, int64_t a, int64_t b, double gemm, double add, Comm comm) {
  RingStreams s(a * r.chunks);
  const int64_t n = r.chunks;
  std::vector<int64_t> waiting(size_t(n), 0);  // pieces received, not summed yet
  std::vector<bool> started(size_t(n), false);  // an accumulator exists
  auto fold = [&](int64_t j, int64_t exchange) {
    for (; waiting[size_t(j)] > 0; --waiting[size_t(j)]) {
      if (started[size_t(j)]) s.run(add, exchange);
      started[size_t(j)] = true;
    }
  };
  for (int64_t k = 1; k <= a; ++k)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t peers = k <= b ? 2 : 1;
      s.run(double(peers) * gemm);
      const double ready = s.compute;
      fold(j, (k - 2) * n + j);
      s.exchange(comm(peers), ready);
      waiting[size_t(j)] = peers;
    }
  for (int64_t j = 0; j < n; ++j) {
    s.run(gemm);
    fold(j, (a - 1) * n + j);
    s.run(add, (a - 1) * n + j);
  }
  return s;
}

double gemmsTotal(const std::vector<double>& gemms) {
  double sum = 0;
  for (double g : gemms) sum += g;
  return sum;
}

// One GEMM of a site's matmul on 1/parts of its rows (the weight read whole each time), as
// cost_model.h's computeSeconds charges it.
double gemmSeconds(const CollectiveMatmulSite::Gemm& g, const HardwareModel& model, double parts) {
  const double m = g.m / parts;
  return computeSeconds(model, g.dtype, 2 * m * g.n * g.k, (m * g.k + g.k * g.n + m * g.n) * g.elem_bytes, std::cbrt(m * g.n * g.k));
}

std::string shapeWords(const RingShape& r) {
  return "; chunks=" + std::to_string(r.chunks) + (r.directions == 2 ? ", both ways" : ", one way") + (r.direct ? ", direct" : "");
}

}  // namespace

std::vector<RingShape> ringCandidates(const CollectiveMatmulMatch& m, int64_t chunks, int directions, int route) {
  // An all-gather's pieces are forwarded as they are (no compute on the way): direct gains nothing.
  const bool scatter = m.form == CollectiveMatmulForm::ReduceScatter;
  std::vector<RingShape> out;
  for (int64_t n : chunks > 0 ? std::vector<int64_t>{chunks} : std::vector<int64_t>{1, 2, 4})
    if (m.shard->shape[0] % n == 0)
      for (int d : {1, 2})
        if (d == 1 ? directions != 2 || m.ranks < 3 : directions != 1 && m.ranks >= 3)
          for (bool direct : {false, true})
            if (direct ? scatter && route != 1 : !scatter || route != 2) out.push_back({n, d, direct});
  return out;
}

int64_t RingShape::mainSteps(int64_t t) const { return directions == 2 ? t / 2 : t - 1; }
int64_t RingShape::secondSteps(int64_t t) const { return directions == 2 ? (t - 1) / 2 : 0; }

CollectiveMatmulSite collectiveMatmulSite(const CollectiveMatmulMatch& m, const HardwareModel& model) {
  CollectiveMatmulSite site;
  site.form = m.form;
  site.ranks = m.ranks;
  site.shard_bytes = bytesOf(m.shard);
  for (const SiteMatmul& mm : m.matmuls) {
    OpView v(*mm.op);
    const Var* x = v.in(mm.rowSlot());
    const Var* w = v.in("Y");
    CollectiveMatmulSite::Gemm g;
    g.k = double(x->shape.back());
    g.n = double(w->numel()) / g.k;
    g.m = double(x->numel()) / g.k;
    g.dtype = x->dtype;
    g.elem_bytes = model.widen_16bit && (x->dtype == DType::Float16 || x->dtype == DType::BFloat16) ? 4 : double(dtypeSize(x->dtype));
    site.gemms.push_back(g);
    site.whole_gemm_s += gemmSeconds(g, model, 1);
    // All-gather form: each product's row blocks are joined; reduce-scatter form: the one matmul's
    // row operand is split into the chunks' rows.
    site.extras_s += copySeconds(bytesOf(m.form == CollectiveMatmulForm::AllGather ? v.out(mm.productSlot()) : x), model);
  }
  if (m.form == CollectiveMatmulForm::AllGather && m.whole_read_elsewhere) site.extras_s += copySeconds(bytesOf(m.whole), model);
  site.whole_s = site.whole_gemm_s + opCostSeconds(*m.collective, model);
  return site;
}

CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulSite& site, const HardwareModel& model, RingShape ring) {
  CollectiveMatmulEstimate e;
  const int64_t chunks = ring.chunks;
  const double t = double(site.ranks), n = double(chunks);
  e.ring = ring;
  e.whole_s = site.whole_s;
  e.whole_gemm_s = site.whole_gemm_s;
  std::vector<double> gemms;
  gemms.reserve(site.gemms.size());
  for (const CollectiveMatmulSite::Gemm& g : site.gemms) {
    gemms.push_back(gemmSeconds(g, model, t * n));
    e.chunk_gemm_s += gemms.back();
  }
  // In pieces: the own shard split (all-gather form) or the output's pieces joined (reduce-scatter).
  const double extras = site.extras_s + (chunks > 1 ? copySeconds(site.shard_bytes, model) : 0);
  const int64_t main = ring.mainSteps(site.ranks), second = ring.secondSteps(site.ranks);
  e.steps = main * chunks;
  // One exchange: a piece to each neighbour it goes to, as analyze costs a group of sends (a
  // rank's sends share its link: simulate.h): its fixed cost once, the pieces' bytes over the link.
  const double link_fixed = p2pFixedSeconds(model);
  auto comm = [&](int64_t pieces) { return link_fixed + double(pieces) * site.shard_bytes / n / model.bus_bw; };
  e.fixed_s = link_fixed;
  e.chunk_comm_s = comm(second > 0 ? 2 : 1);
  const double per_step = second > 0 ? 2 : 1;  // chunks a step multiplies
  e.chunk_gemm_s *= per_step;
  e.fixed_s += per_step * double(site.gemms.size()) * model.op_overhead_s;
  // The reduce-scatter form's accumulator add of a piece: both operands read and the sum written once.
  const double add_s = model.op_overhead_s + 3 * site.shard_bytes / n / model.mem_bw;
  RingStreams s = site.form == CollectiveMatmulForm::AllGather ? gatherPipeline(ring, main, second, gemms, comm)
                  : ring.direct ? directPipeline(ring, main, second, gemmsTotal(gemms), add_s, comm)
                                : scatterPipeline(ring, main, second, gemmsTotal(gemms), add_s, comm);
  e.decomposed_s = s.compute + extras;
  // What the compute stream waits for the ring: the pipeline less its own work.
  e.exposed_s = std::max(0.0, s.compute - s.work);
  return e;
}

Refusal collectiveMatmulCostRefusal(const CollectiveMatmulEstimate& e, bool explaining) {
  if (e.decomposed_s < e.whole_s) return {};
  bool latency = e.fixed_s * 2 >= e.chunk_gemm_s + e.chunk_comm_s;
  Refusal r{latency ? "latency-bound" : "no-gain", ""};
  if (explaining)
    r.reason = "ring " + us(e.decomposed_s) + " against " + us(e.whole_s) + " whole: a step's GEMMs take " + us(e.chunk_gemm_s) +
               " and its transfer " + us(e.chunk_comm_s) + " (" + us(e.fixed_s) + " of them fixed: latency, op overheads), " +
               std::to_string(e.steps) + (e.steps == 1 ? " step" : " steps") + shapeWords(e.ring);
  return r;
}

std::string collectiveMatmulExposure(const CollectiveMatmulEstimate& e) {
  return "ring " + us(e.decomposed_s) + " against " + us(e.whole_s) + " whole (GEMMs " + us(e.whole_gemm_s) + "); step GEMMs " +
         us(e.chunk_gemm_s) + ", step transfer " + us(e.chunk_comm_s) + ", " + std::to_string(e.steps) + (e.steps == 1 ? " step" : " steps") + ": the compute stream waits " +
         us(e.exposed_s) + " for transfers" + shapeWords(e.ring);
}

}  // namespace spopt
