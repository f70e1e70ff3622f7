#include "analysis/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "analysis/comm_stats.h"
#include "analysis/p2p.h"
#include "ops/op_view.h"

namespace spopt {

namespace {

constexpr double kTera = 1e12, kGiga = 1e9, kMicro = 1e-6;

// Dense peaks from the vendors' datasheets (docs/analyze.md): 16-bit on tensor cores, float32
// without TF32 (what a float32 GEMM gets unless a framework opts into TF32), float64 tensor cores.
HardwareModel gpu(std::string name, double bf16_tflops, double fp32_tflops, double fp64_tflops, double hbm_tbs,
                  double bus_gbs, double latency_us, double step_us, std::string source) {
  HardwareModel m;
  m.name = std::move(name);
  m.setAllFlops(fp32_tflops * kTera);
  m.flops_per_s[size_t(DType::Float16)] = bf16_tflops * kTera;
  m.flops_per_s[size_t(DType::BFloat16)] = bf16_tflops * kTera;
  m.flops_per_s[size_t(DType::Float64)] = fp64_tflops * kTera;
  m.mem_bw = hbm_tbs * kTera;
  m.bus_bw = bus_gbs * kGiga;
  m.latency_s = latency_us * kMicro;
  m.step_latency_s = step_us * kMicro;
  m.source = std::move(source);
  return m;
}

}  // namespace

std::vector<std::string_view> presetNames() { return {"h100-nvlink", "h200-nvlink", "a100-nvlink", "host"}; }

std::optional<HardwareModel> presetModel(std::string_view name) {
  if (name == "h100-nvlink")
    return gpu("h100-nvlink", 989, 67, 67, 3.35, 370, 7, 0.6,
               "H100 SXM datasheet (989 TFLOP/s dense bf16, 3.35 TB/s HBM3); ring bus bw 370 GB/s as NCCL reaches "
               "on NVLink 4 (nccl-tests#212); alpha from NCCL's ring tuning model");
  if (name == "h200-nvlink")
    return gpu("h200-nvlink", 989, 67, 67, 4.8, 370, 7, 0.6,
               "H200 SXM datasheet (989 TFLOP/s dense bf16, 4.8 TB/s HBM3e); NVLink 4 as H100");
  if (name == "a100-nvlink")
    return gpu("a100-nvlink", 312, 19.5, 19.5, 2.0, 240, 8, 1.0,
               "A100 SXM datasheet (312 TFLOP/s dense bf16, 2.0 TB/s HBM2e); 230-250 GB/s all-reduce bus bw on "
               "8 GPUs over NVLink 3");
  return std::nullopt;
}

HardwareModel hostModel(const HostMeasurement& h) {
  HardwareModel m;
  m.name = "host";
  // Replay computes 16-bit types in float32 and integers are never GEMMs: float32's rate for all
  // but float64.
  m.setAllFlops(h.sgemm_flops);
  m.flops_per_s[size_t(DType::Float64)] = h.dgemm_flops > 0 ? h.dgemm_flops : h.sgemm_flops / 2;
  m.mem_bw = h.copy_bw;
  // The local backend's collectives are copies through shared memory: each rank reads its peers'
  // chunks and writes its own, at copy bandwidth.
  m.bus_bw = h.copy_bw;
  m.latency_s = 20 * kMicro;  // a condition-variable rendezvous of the rank threads
  m.step_latency_s = 0;
  m.op_overhead_s = h.op_overhead_s;
  m.wake_s = h.wake_s;
  m.gemm_curve = h.sgemm_curve;
  m.widen_16bit = true;
  m.source = "measured on this machine with " + std::to_string(h.ranks) +
             " rank threads at once: sgemm by size through replay's BLAS, a copy loop";
  return m;
}

namespace {
std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

void applyOverrides(HardwareModel& m, const ModelOverrides& o) {
  auto check = [](const std::optional<double>& v, const char* option) {
    if (v && !(*v > 0 && std::isfinite(*v)))
      throw std::invalid_argument(std::string(option) + " must be a positive number, not " + shortNumber(*v));
  };
  check(o.flops, "--flops");
  check(o.mem_bw, "--mem-bw");
  check(o.bus_bw, "--bus-bw");
  if (o.latency_s && !(*o.latency_s >= 0 && std::isfinite(*o.latency_s)))
    throw std::invalid_argument("--latency must be zero or positive, not " + shortNumber(*o.latency_s));
  // --flops sets the rate of the model's compute dtype: every 16-bit figure, or every figure
  // when the model has a single rate.
  if (o.flops) {
    double ratio = *o.flops / m.flopsFor(DType::BFloat16);
    for (double& f : m.flops_per_s) f *= ratio;
  }
  if (o.mem_bw) m.mem_bw = *o.mem_bw;
  if (o.bus_bw) m.bus_bw = *o.bus_bw;
  if (o.latency_s) m.latency_s = *o.latency_s;
  if (o.flops || o.mem_bw || o.bus_bw || o.latency_s) m.name += " (overridden)";
}

namespace {

double numel(const Var* v) {
  if (!v) return 0;
  int64_t n = v->numel();
  return n < 0 ? 0 : double(n);
}

// The curve's rate at `size`, interpolated in log-log; clamped at both ends.
double curveRate(const std::vector<std::pair<double, double>>& c, double size) {
  if (size <= c.front().first) return c.front().second;
  if (size >= c.back().first) return c.back().second;
  for (size_t i = 1; i < c.size(); ++i)
    if (size <= c[i].first) {
      double f = std::log(size / c[i - 1].first) / std::log(c[i].first / c[i - 1].first);
      return std::exp(std::log(c[i - 1].second) + f * std::log(c[i].second / c[i - 1].second));
    }
  return c.back().second;
}

}  // namespace

namespace {
// The three measures on one view of the op: opCostSeconds asks all of them, per op of a job.
double gemmSizeOf(const OpView& v) {
  if (!v.has(trait::Blas)) return 0;
  const Var* x = v.in("X");
  const Var* y = v.in("Y");
  if (!x || !y || x->shape.size() < 2 || y->shape.empty()) return 0;
  bool tx = v.attrs.getBool("trans_x").value_or(false), ty = v.attrs.getBool("trans_y").value_or(false);
  size_t r = x->shape.size();
  double m = double(x->shape[tx ? r - 1 : r - 2]), k = double(x->shape[tx ? r - 2 : r - 1]);
  double n = double(y->shape.size() >= 2 ? y->shape[ty ? y->shape.size() - 2 : y->shape.size() - 1] : 1);
  // A 2-D weight applied to batched activations: one GEMM with the batch folded into m.
  if (y->shape.size() == 2 && !tx && r > 2) m = numel(x) / std::max(k, 1.0);
  return std::cbrt(std::max(m * n * k, 0.0));
}

// The op's catalogue cost (ops/op_def.h CostDef); docs/analyze.md, "FLOP counts".
double flopsOf(const OpView& v) {
  const Op& op = v.op();
  const bool kernel_allreduce = v.def() && v.def()->collective == CollectiveKind::KernelAllReduce;
  if ((v.def() && v.def()->collective && !kernel_allreduce) || v.has(trait::MovesOnly) || (v.def() && v.def()->p2p)) return 0;
  if (const OpDef* d = v.def(); d && (d->cost.flops || d->cost.per_element >= 0)) {
    if (d->cost.flops) return d->cost.flops(v);
    const Var* counted = d->cost.of_input ? v.in(d->cost.slot) : v.out(d->cost.slot);
    return d->cost.per_element * numel(counted);
  }
  // An op nobody costed: one FLOP per output element.
  double n = 0;
  for (const Slot& s : op.outputs)
    for (const Arg& a : s.args) n += numel(a.var);
  return n;
}

double bytesTouchedOf(const OpView& v, const HardwareModel& m) {
  const Op& op = v.op();
  // A view moves nothing: a GPU framework aliases the buffer, and so does replay (shareTensor).
  if (v.has(trait::View)) return 0;
  auto size = [&](const Var* var) {
    if (!var) return 0.0;
    bool is16 = var->dtype == DType::Float16 || var->dtype == DType::BFloat16;
    return numel(var) * double(m.widen_16bit && is16 ? 4 : dtypeSize(var->dtype));
  };
  double bytes = 0;
  for (const Slot& s : op.inputs) {
    const OperandDef* o = v.inputOfSlot(s.name);
    if (o && !o->reads_buffer) continue;
    for (const Arg& a : s.args) bytes += size(a.var);
  }
  for (const Slot& s : op.outputs) {
    const OperandDef* o = v.outputOfSlot(s.name);
    if (o && !o->reads_buffer) continue;  // a shape record (XShape) holds no data
    for (const Arg& a : s.args) bytes += size(a.var);
  }
  return bytes;
}

}  // namespace

double gemmSize(const Op& op) { return gemmSizeOf(OpView(op)); }
double opFlops(const Op& op) { return flopsOf(OpView(op)); }
double opBytesTouched(const Op& op, const HardwareModel& m) { return bytesTouchedOf(OpView(op), m); }

std::optional<WireBytes> collectiveWireBytes(const Op& op, const Collective& c, const Job& job) {
  if (!communicates(c)) return std::nullopt;
  auto payload = collectiveBytes(op, c, job, false);
  auto wire = collectiveBytes(op, c, job, true);
  if (!payload || !wire) return std::nullopt;
  WireBytes w;
  w.payload = *payload;
  w.wire = *wire;
  const ProcessGroup* g = job.group(c.ring_id);
  w.group_size = g ? int64_t(g->ranks.size()) : op.attrs.getInt("nranks").value_or(1);
  int64_t n = std::max<int64_t>(w.group_size, 1);
  w.steps = c.kind == CollectiveKind::AllReduce ? 2 * (n - 1) : n - 1;
  return w;
}

namespace {
double ringSeconds(const Op& op, const Collective& c, const HardwareModel& m) {
  const Job* job = op.block && op.block->program ? op.block->program->job : nullptr;
  if (!job || !communicates(c)) return 0;
  auto w = collectiveWireBytes(op, c, *job);
  if (!w || w->group_size < 2) return 0;
  return m.latency_s + m.wake_s + double(w->steps) * m.step_latency_s + double(w->wire) / m.bus_bw;
}
}  // namespace

double p2pSeconds(const PointToPoint& p, const HardwareModel& m) {
  // One transfer over one link: alpha + bytes / link bandwidth (a ring's per-rank bus bandwidth
  // is its links' bandwidth; one ring step).
  const Var* v = p.tensor;
  if (!v || v->byteSize().value_or(0) == 0) return 0;
  return p2pFixedSeconds(m) + double(*v->byteSize()) / m.bus_bw;
}

double p2pFixedSeconds(const HardwareModel& m) { return m.latency_s + m.wake_s + m.step_latency_s; }

// A kernel all-reduce costs its compute and its ring time, one after the other.
double opCostSeconds(const Op& op, const HardwareModel& m) {
  if (auto p = asPointToPoint(op)) return p2pSeconds(*p, m);
  if (auto c = asCollective(op)) return collectiveSeconds(op, *c, m);
  return kernelSeconds(op, m);
}

double collectiveSeconds(const Op& op, const Collective& c, const HardwareModel& m) {
  const double ring_s = ringSeconds(op, c, m);
  return c.kind == CollectiveKind::KernelAllReduce ? ring_s + kernelSeconds(op, m) : ring_s;
}

double kernelSeconds(const Op& op, const HardwareModel& m) {
  const OpView v(op);
  double flops = flopsOf(v), bytes = bytesTouchedOf(v, m);
  // A view (reshape) moves nothing but is still an op the executor dispatches.
  if (flops == 0 && bytes == 0) return m.op_overhead_s;
  DType t = DType::Float32;
  if (!op.outputs.empty() && !op.outputs[0].args.empty() && op.outputs[0].args[0].var)
    t = op.outputs[0].args[0].var->dtype;
  else if (!op.inputs.empty() && !op.inputs[0].args.empty() && op.inputs[0].args[0].var)
    t = op.inputs[0].args[0].var->dtype;
  // The GEMM's size matters only against a measured curve (a GPU preset has none).
  return computeSeconds(m, t, flops, bytes, m.gemm_curve.empty() ? 0 : gemmSizeOf(v));
}

double computeSeconds(const HardwareModel& m, DType t, double flops, double bytes, double gemm_size) {
  double rate = m.flopsFor(t);
  if (!m.gemm_curve.empty() && gemm_size > 0) rate = std::min(rate, curveRate(m.gemm_curve, gemm_size));
  return m.op_overhead_s + std::max(flops / rate, bytes / m.mem_bw);
}

}  // namespace spopt
