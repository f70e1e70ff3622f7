#pragma once
// decompose-collective-matmul's decision for one site on one rank: the site as it is (the
// collective, then the matmul that waits on it) against the ring that replaces it (t steps, a
// chunk's GEMM on the compute stream while a neighbour exchange runs on the comm stream), both
// timed with the analyze cost model (analysis/cost_model.h) under the pass's preset.
//
//   step GEMM       computeSeconds of a GEMM on 1/t of the rows, the weight read whole (so a
//                   chunk that small is memory-bound where the whole GEMM was not)
//   step transfer   one chunk to the neighbour over one link, as analyze costs a send:
//                   latency + step latency + chunk bytes / bus bandwidth
//   extras          the concat of the output row blocks (all-gather form; and of G when another op
//                   reads it), the split of X and t-1 accumulator adds (reduce-scatter form)
// The t-1 transfers carry the bytes the ring collective carried, so the ring hides at most the
// GEMMs' time: what stays exposed is about (t-1) x max(0, transfer - GEMM) per step, and a site
// whose communication exceeds its GEMM keeps the difference exposed. Declined when the ring is
// not faster than the site as it is: `latency-bound` when the fixed costs (latency and op
// overheads) make up most of a step, else `no-gain`.
#include <string>

#include "analysis/cost_model.h"
#include "passes/collective_matmul_match.h"
#include "passes/refusal.h"

namespace spopt {

struct CollectiveMatmulEstimate {
  double whole_s = 0;       // the collective, then its matmuls
  double whole_gemm_s = 0;  // of whole_s: the matmuls
  double decomposed_s = 0;  // the pipeline, extras included
  double chunk_gemm_s = 0;  // one chunk's GEMMs (all of the site's matmuls)
  double chunk_comm_s = 0;  // one chunk's transfer
  double fixed_s = 0;       // of chunk_gemm_s + chunk_comm_s: latency and op overheads
  double exposed_s = 0;     // of decomposed_s: the compute stream waiting for transfers (exposed comm)
  int64_t steps = 0;        // neighbour exchanges: t - 1
};

CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulMatch& m, const HardwareModel& model);
// Empty when the decomposition pays; else why not, in words when `explaining`.
Refusal collectiveMatmulCostRefusal(const CollectiveMatmulEstimate& e, bool explaining);
// The figures of an accepted site, for --explain.
std::string collectiveMatmulExposure(const CollectiveMatmulEstimate& e);

}  // namespace spopt
