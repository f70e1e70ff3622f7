#pragma once
// What an op costs on a machine: FLOPs, bytes touched, bytes on the wire, and seconds under a
// roofline (compute ops) or ring alpha-beta model (collectives). docs/analyze.md gives the sources
// of every preset and the per-element FLOP counts.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/collectives.h"
#include "ir/ir.h"

namespace spopt {

inline constexpr size_t kDTypeCount = 8;  // DType's enumerators

struct HardwareModel {
  std::string name;
  std::array<double, kDTypeCount> flops_per_s{};  // peak dense FLOP/s by the op's dtype
  double mem_bw = 0;          // bytes/s a compute op reads + writes at most
  double bus_bw = 0;          // bytes/s of ring traffic per rank (nccl-tests "bus bandwidth")
  double latency_s = 0;       // alpha: fixed cost of one collective
  double step_latency_s = 0;  // added per ring step (n-1 steps; 2(n-1) for all-reduce)
  double op_overhead_s = 0;   // fixed cost of every compute op (launch, dispatch)
  // Added to every collective, link or not: the waiting thread resuming once the wait ends (host:
  // on a shared CPU a sleeping rank or stream thread waits for a core, milliseconds under load).
  double wake_s = 0;
  // float16/bfloat16 stored and computed as float32 (what replay does).
  bool widen_16bit = false;
  // Measured GEMM rate by problem size (cube root of m*n*k, ascending), for a machine whose small
  // GEMMs run far below its peak (a CPU); empty: every GEMM runs at the dtype's peak.
  std::vector<std::pair<double, double>> gemm_curve;
  std::string source;  // where the figures come from (one line)

  double flopsFor(DType t) const { return flops_per_s[static_cast<size_t>(t)]; }
  void setAllFlops(double f) { flops_per_s.fill(f); }
};

// Names presetModel knows, "host" included (which needs calibrate numbers: hostModel).
std::vector<std::string_view> presetNames();
// A GPU preset by name; nullopt for an unknown one (and for "host": see hostModel).
std::optional<HardwareModel> presetModel(std::string_view name);

// This machine, from measured rates (lib/runtime/calibrate.h measures them).
struct HostMeasurement {
  double sgemm_flops = 0;    // FLOP/s of a float32 GEMM through the replay's BLAS (the largest size)
  std::vector<std::pair<double, double>> sgemm_curve;  // size (n of n x n x n) -> FLOP/s
  double dgemm_flops = 0;    // float64
  double copy_bw = 0;        // bytes/s read + written by a large copy loop
  double op_overhead_s = 0;  // fixed cost per replayed op
  double wake_s = 0;         // how late a thread resumes after a timed wait (median overshoot)
  int cores = 1;
  int ranks = 1;             // rates measured with this many ranks working at once (per rank)
};
HardwareModel hostModel(const HostMeasurement& m);

// Overrides from the command line; a negative or zero value is bad input (std::invalid_argument
// with a sentence naming the option).
struct ModelOverrides {
  std::optional<double> flops, mem_bw, bus_bw, latency_s;
};
void applyOverrides(HardwareModel& m, const ModelOverrides& o);

// The op's FLOPs (documented per-element counts; matmul 2mnk with batch dims). 0 for data
// movement and collectives.
double opFlops(const Op& op);
// The size of one GEMM of a matmul op (cube root of m*n*k of a single GEMM, after folding a 2-D
// weight's batch into m as replay and cuBLAS callers do); 0 for other ops.
double gemmSize(const Op& op);
// Bytes the op's kernel reads and writes (element size as the model stores it). Views (reshape)
// touch nothing.
double opBytesTouched(const Op& op, const HardwareModel& m);
// Per-rank ring traffic of a communicating collective (comm_stats' bus factors), payload, and
// the number of ring steps it takes; nullopt for a non-collective or unknown size.
struct WireBytes {
  int64_t payload = 0;
  int64_t wire = 0;
  int64_t steps = 0;
  int64_t group_size = 1;
};
std::optional<WireBytes> collectiveWireBytes(const Op& op, const Collective& c, const Job& job);

// Seconds of a compute kernel on `m` that does `flops` in `t` and reads and writes `bytes`:
// overhead + max(FLOPs / rate, bytes / mem_bw), the rate capped by the GEMM curve at `gemm_size`
// (gemmSize's measure; 0: not a GEMM). What opCostSeconds charges a compute op; passes that cost
// an op they have not built yet (a chunk of a GEMM) call it with that op's figures.
double computeSeconds(const HardwareModel& m, DType t, double flops, double bytes, double gemm_size);

// Seconds of the op on `m`: a collective alpha + wake + steps x step latency + wire / bus_bw; a compute op
// overhead + max(FLOPs / peak, bytes / mem_bw).
double opCostSeconds(const Op& op, const HardwareModel& m);
// The same of a collective `c` (asCollective(op)), its attributes not read again.
double collectiveSeconds(const Op& op, const Collective& c, const HardwareModel& m);
// Of that, an op's kernel: all of a compute op's cost; a kernel all-reduce's before its ring time.
// What a caller that already knows the op neither communicates nor sends asks (OpFactsCache).
double kernelSeconds(const Op& op, const HardwareModel& m);
// A send or receive (analysis/p2p.h): p2pFixedSeconds + bytes / link bandwidth (bus_bw); 0 for no data.
struct PointToPoint;
double p2pSeconds(const PointToPoint& p, const HardwareModel& m);
// What one exchange of sends and receives costs beside its bytes: the link's latency, one ring
// step, and the wake-up of the thread that waited for it (as a collective's).
double p2pFixedSeconds(const HardwareModel& m);

}  // namespace spopt
