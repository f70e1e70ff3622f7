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

// All-gather form, rank at ring position p: its own chunk's GEMM first, then chunk j once its
// broadcast (the j-th, in ring order on every member) has arrived.
double gatherPipeline(int64_t t, int64_t p, double gemm, double comm) {
  double end = gemm;
  for (int64_t j = 0; j < t; ++j)
    if (j != p) end = std::max(end, double(j + 1) * comm) + gemm;
  return end;
}

// Reduce-scatter form: the partial product of chunk j, then its reduce to rank j while the next
// partial is computed; the reduces run one after the other.
double scatterPipeline(int64_t t, double gemm, double comm) {
  double reduced = 0;
  for (int64_t j = 0; j < t; ++j) reduced = std::max(reduced, double(j + 1) * gemm) + comm;
  return reduced;
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

CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulMatch& m, const HardwareModel& model) {
  CollectiveMatmulEstimate e;
  const double t = double(m.ranks);
  double gemm = 0, extras = 0;
  for (const SiteMatmul& mm : m.matmuls) {
    e.whole_s += gemmSeconds(mm, model, 1);
    gemm += gemmSeconds(mm, model, t);
    const Var* out = OpView(*mm.op).out(mm.grad ? "X@GRAD" : "Out");
    if (m.form == CollectiveMatmulForm::AllGather) extras += copySeconds(bytesOf(out), model);
  }
  if (m.form == CollectiveMatmulForm::AllGather && m.whole_read_elsewhere) extras += copySeconds(bytesOf(m.whole), model);
  if (m.form == CollectiveMatmulForm::ReduceScatter)
    extras += copySeconds(bytesOf(OpView(*m.matmuls.front().op).in(m.matmuls.front().grad ? "Out@GRAD" : "X")), model);
  e.whole_s += opCostSeconds(*m.collective, model);
  // A rooted transfer of one chunk: the ring's t-1 steps, the chunk's bytes on each link.
  double comm = model.latency_s + (t - 1) * model.step_latency_s + bytesOf(m.shard) / model.bus_bw;
  e.chunk_gemm_s = gemm;
  e.chunk_comm_s = comm;
  e.fixed_s = model.latency_s + (t - 1) * model.step_latency_s + double(m.matmuls.size()) * model.op_overhead_s;
  double pipeline = 0;
  if (m.form == CollectiveMatmulForm::AllGather)
    for (int64_t p = 0; p < m.ranks; ++p) pipeline = std::max(pipeline, gatherPipeline(m.ranks, p, gemm, comm));
  else
    pipeline = scatterPipeline(m.ranks, gemm, comm);
  e.decomposed_s = pipeline + extras;
  return e;
}

Refusal collectiveMatmulCostRefusal(const CollectiveMatmulEstimate& e, bool explaining) {
  if (e.decomposed_s < e.whole_s) return {};
  bool latency = e.fixed_s * 2 >= e.chunk_gemm_s + e.chunk_comm_s;
  Refusal r{latency ? "latency-bound" : "no-gain", ""};
  if (explaining)
    r.reason = "decomposed " + us(e.decomposed_s) + " against " + us(e.whole_s) + " whole: a chunk's GEMMs take " +
               us(e.chunk_gemm_s) + " and its transfer " + us(e.chunk_comm_s) + ", " + us(e.fixed_s) +
               " of them fixed costs (latency, op overheads)";
  return r;
}

}  // namespace spopt
