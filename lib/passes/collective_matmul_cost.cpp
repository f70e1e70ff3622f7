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

// All-gather form, each shard in n pieces: exchange e (the piece received by exchange e-n sent
// on, the next one received) ends at (e + 1) x transfer, the comm stream running them in turn;
// each matmul's piece GEMMs run in exchange order, piece i (the own shard's n first) once
// exchange i-n has landed. `gemms`: one piece GEMM per matmul of the site, in program order.
double gatherPipeline(int64_t t, int64_t n, const std::vector<double>& gemms, double comm) {
  double end = 0;
  for (double g : gemms)
    for (int64_t i = 0; i < t * n; ++i) end = std::max(end, i < n ? 0 : double(i - n + 1) * comm) + g;
  return end;
}

// Reduce-scatter form, each chunk in n pieces: the compute stream runs partial product (k, j),
// then adds the accumulator piece j of step k-1 (waiting for it), and the comm stream sends the sum
// on once it is free; the next partial runs while it travels.
double scatterPipeline(int64_t t, int64_t n, double gemm, double add, double comm) {
  double compute = 0, comm_free = 0;
  std::vector<double> landed(size_t(n), 0);
  for (int64_t k = 0; k < t; ++k)
    for (int64_t j = 0; j < n; ++j) {
      compute += gemm;
      if (k > 0) compute = std::max(compute, landed[size_t(j)]) + add;
      if (k + 1 < t) landed[size_t(j)] = comm_free = std::max(comm_free, compute) + comm;
    }
  return compute;
}

// One GEMM of a site's matmul on `rows` of its row operand (the weight read whole each time), as
// cost_model.h's computeSeconds charges it.
double gemmSeconds(const SiteMatmul& mm, const HardwareModel& model, double parts) {
  OpView v(*mm.op);
  const Var* x = v.in(mm.grad ? "Out@GRAD" : "X");
  const Var* w = v.in("Y");
  double k = double(x->shape.back()), n = double(w->numel()) / k, m = double(x->numel()) / k / parts;
  bool wide = model.widen_16bit && (x->dtype == DType::Float16 || x->dtype == DType::BFloat16);
  double elem = wide ? 4 : double(dtypeSize(x->dtype));
  return computeSeconds(model, x->dtype, 2 * m * n * k, (m * k + k * n + m * n) * elem, std::cbrt(m * n * k));
}

}  // namespace

CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulMatch& m, const HardwareModel& model, int64_t chunks) {
  CollectiveMatmulEstimate e;
  const double t = double(m.ranks), n = double(chunks);
  double extras = 0;
  std::vector<double> gemms;
  for (const SiteMatmul& mm : m.matmuls) {
    e.whole_gemm_s += gemmSeconds(mm, model, 1);
    gemms.push_back(gemmSeconds(mm, model, t * n));
    e.chunk_gemm_s += gemms.back();
    const Var* out = OpView(*mm.op).out(mm.grad ? "X@GRAD" : "Out");
    if (m.form == CollectiveMatmulForm::AllGather) extras += copySeconds(bytesOf(out), model);
  }
  if (m.form == CollectiveMatmulForm::AllGather && m.whole_read_elsewhere) extras += copySeconds(bytesOf(m.whole), model);
  if (m.form == CollectiveMatmulForm::ReduceScatter)
    extras += copySeconds(bytesOf(OpView(*m.matmuls.front().op).in(m.matmuls.front().grad ? "Out@GRAD" : "X")), model);
  // In pieces: the own shard split (all-gather form) or the output's pieces joined (reduce-scatter).
  if (chunks > 1) extras += copySeconds(bytesOf(m.shard), model);
  e.whole_s = e.whole_gemm_s + opCostSeconds(*m.collective, model);
  e.steps = (m.ranks - 1) * chunks;
  // One exchange: a piece to the neighbour over one link, as analyze costs a send (p2pSeconds).
  e.fixed_s = model.latency_s + model.step_latency_s;
  e.chunk_comm_s = e.fixed_s + bytesOf(m.shard) / n / model.bus_bw;
  e.fixed_s += double(m.matmuls.size()) * model.op_overhead_s;
  // The reduce-scatter form's accumulator add of a piece: both operands read and the sum written once.
  const double add_s = model.op_overhead_s + 3 * bytesOf(m.shard) / n / model.mem_bw;
  if (m.form == CollectiveMatmulForm::AllGather) {
    e.decomposed_s = gatherPipeline(m.ranks, chunks, gemms, e.chunk_comm_s) + extras;
  } else {
    e.decomposed_s = scatterPipeline(m.ranks, chunks, e.chunk_gemm_s, add_s, e.chunk_comm_s) + extras;
  }
  // What the compute stream waits for the ring: the pipeline less its own work.
  double work = t * n * e.chunk_gemm_s + (m.form == CollectiveMatmulForm::ReduceScatter ? double(e.steps) * add_s : 0);
  e.exposed_s = std::max(0.0, e.decomposed_s - extras - work);
  return e;
}

Refusal collectiveMatmulCostRefusal(const CollectiveMatmulEstimate& e, bool explaining) {
  if (e.decomposed_s < e.whole_s) return {};
  bool latency = e.fixed_s * 2 >= e.chunk_gemm_s + e.chunk_comm_s;
  Refusal r{latency ? "latency-bound" : "no-gain", ""};
  if (explaining)
    r.reason = "ring " + us(e.decomposed_s) + " against " + us(e.whole_s) + " whole: a step's GEMMs take " + us(e.chunk_gemm_s) +
               " and its transfer " + us(e.chunk_comm_s) + " (" + us(e.fixed_s) + " of them fixed: latency, op overheads), " +
               std::to_string(e.steps) + (e.steps == 1 ? " step" : " steps");
  return r;
}

std::string collectiveMatmulExposure(const CollectiveMatmulEstimate& e) {
  return "ring " + us(e.decomposed_s) + " against " + us(e.whole_s) + " whole (GEMMs " + us(e.whole_gemm_s) + "); step GEMMs " +
         us(e.chunk_gemm_s) + ", step transfer " + us(e.chunk_comm_s) + ", " + std::to_string(e.steps) + (e.steps == 1 ? " step" : " steps") + ": the compute stream waits " +
         us(e.exposed_s) + " for transfers";
}

}  // namespace spopt
