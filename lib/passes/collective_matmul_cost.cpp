// See collective_matmul_cost.h.
#include "passes/collective_matmul_cost.h"

#include <algorithm>
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

}  // namespace

CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulMatch& m, const HardwareModel& model) {
  CollectiveMatmulEstimate e;
  const double t = double(m.ranks);
  double gemm = 0, extras = 0;
  for (const SiteMatmul& mm : m.matmuls) {
    // A matmul_v2_grad costs its two GEMMs; its dX GEMM is one of them.
    double whole = opCostSeconds(*mm.op, model) / (mm.grad ? 2 : 1);
    e.whole_s += whole;
    gemm += model.op_overhead_s + std::max(whole - model.op_overhead_s, 0.0) / t;
    const Var* out = mm.op->outputs.empty() || mm.op->outputs[0].args.empty() ? nullptr : mm.op->outputs[0].args[0].var;
    if (m.form == CollectiveMatmulForm::AllGather) extras += copySeconds(bytesOf(out), model);
  }
  if (m.form == CollectiveMatmulForm::AllGather && m.whole_read_elsewhere) extras += copySeconds(bytesOf(m.whole), model);
  if (m.form == CollectiveMatmulForm::ReduceScatter) extras += copySeconds(bytesOf(m.matmuls.front().op->inputs[0].args[0].var), model);
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
