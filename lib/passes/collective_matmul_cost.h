#pragma once
// decompose-collective-matmul's decision for one site on one rank: the site as it is (the
// collective, then the matmul that waits on it) against the decomposed pipeline (one chunk per
// ring member; a chunk's GEMM on the compute stream while the next chunk travels on the comm
// stream), both timed with the analyze cost model (analysis/cost_model.h) under the pass's preset.
//
//   chunk GEMM      computeSeconds of a GEMM on 1/t of the rows, the weight read whole (so a
//                   chunk that small is memory-bound where the whole GEMM was not)
//   chunk transfer  latency + steps x step latency + chunk bytes / bus bandwidth
//                   (a rooted transfer of the chunk: broadcast from its owner, reduce to it)
//   extras          the concat of the output row blocks (all-gather form; and of G when another op
//                   reads it), the split of X (reduce-scatter form): copies at memory bandwidth
// The pipeline is played out step by step for every ring position and the slowest member is
// taken, so a member whose own chunk comes last is counted. Declined when the pipeline is not
// faster: `latency-bound` when the fixed costs (latency and op overheads) make up most of a step,
// else `no-gain`.
#include <string>

#include "analysis/cost_model.h"
#include "passes/collective_matmul_match.h"
#include "passes/refusal.h"

namespace spopt {

struct CollectiveMatmulEstimate {
  double whole_s = 0;       // the collective, then its matmuls
  double decomposed_s = 0;  // the pipeline, extras included
  double chunk_gemm_s = 0;  // one chunk's GEMMs (all of the site's matmuls)
  double chunk_comm_s = 0;  // one chunk's transfer
  double fixed_s = 0;       // of chunk_gemm_s + chunk_comm_s: latency and op overheads
};

CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulMatch& m, const HardwareModel& model);
// Empty when the decomposition pays; else why not, in words when `explaining`.
Refusal collectiveMatmulCostRefusal(const CollectiveMatmulEstimate& e, bool explaining);

}  // namespace spopt
