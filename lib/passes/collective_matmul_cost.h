#pragma once
// decompose-collective-matmul's decision for one site on one rank: the site as it is (the
// collective, then the matmul that waits on it) against the ring that replaces it (each of the t
// shards in `chunks` pieces: (t-1) x chunks exchanges, a piece's GEMM on the compute stream while
// a neighbour exchange runs on the comm stream), both timed with the analyze cost model
// (analysis/cost_model.h) under the pass's preset.
//
//   step GEMM       computeSeconds of a GEMM on 1/(t x chunks) of the rows, the weight read whole
//                   (so a piece that small is memory-bound where the whole GEMM was not)
//   step transfer   one piece to the neighbour (two ways: one to each) over one link, as analyze
//                   costs a group of sends: latency + step latency + the pieces' bytes / bus bw
//   extras          the concat of the output row blocks (all-gather form; and of G when another op
//                   reads it), the split of X and the adds (reduce-scatter form); in pieces, the
//                   split of the own shard or the join of the output's pieces
// The exchanges carry the bytes the ring collective carried, so the ring hides at most the
// GEMMs' time; each pays the send's latency, so more pieces cost (t-1) x (chunks-1) latencies
// more and gain only a shorter fill and drain (one piece's GEMM or transfer instead of a shard's).
// A site whose communication exceeds its GEMM keeps the difference exposed. Declined when the ring
// is not faster than the site as it is: `latency-bound` when the fixed costs (latency and op
// overheads) make up most of a step, else `no-gain`. The pass takes, per site, the shape
// (chunks, directions) whose ring is shortest on its slowest member.
#include <string>
#include <vector>

#include "analysis/cost_model.h"
#include "passes/collective_matmul_match.h"
#include "passes/refusal.h"

namespace spopt {

struct CollectiveMatmulEstimate {
  RingShape ring;
  double whole_s = 0;       // the collective, then its matmuls
  double whole_gemm_s = 0;  // of whole_s: the matmuls
  double decomposed_s = 0;  // the pipeline, extras included
  double chunk_gemm_s = 0;  // one piece's GEMMs (all of the site's matmuls)
  double chunk_comm_s = 0;  // one piece's transfer
  double fixed_s = 0;       // of chunk_gemm_s + chunk_comm_s: latency and op overheads
  double exposed_s = 0;     // of decomposed_s: the compute stream waiting for transfers (exposed comm)
  int64_t steps = 0;        // neighbour exchanges: (t - 1) x chunks one way, t/2 x chunks both ways
};

// What a site's estimate reads from the program, whatever the ring's shape: read once per site,
// then timed for each shape the pass weighs.
struct CollectiveMatmulSite {
  struct Gemm {
    double m = 0, n = 0, k = 0;  // the whole GEMM: m rows of the row operand
    DType dtype = DType::Float32;
    double elem_bytes = 4;       // as the model moves an element (16-bit widened where it says so)
    bool operator==(const Gemm&) const = default;
  };
  CollectiveMatmulForm form = CollectiveMatmulForm::AllGather;
  int64_t ranks = 0;
  double shard_bytes = 0;
  double whole_s = 0, whole_gemm_s = 0;  // the site as it is; of it, the matmuls
  double extras_s = 0;                   // the copies any shape pays (not the pieces' split or join)
  std::vector<Gemm> gemms;               // one per matmul of the site, in program order
  // Equal sites have equal estimates: a job's layers repeat a handful of sites (the pass weighs each once).
  bool operator==(const CollectiveMatmulSite&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CollectiveMatmulSite& s) {
    h = H::combine(std::move(h), s.form, s.ranks, s.shard_bytes, s.whole_s, s.whole_gemm_s, s.extras_s);
    for (const Gemm& g : s.gemms) h = H::combine(std::move(h), g.m, g.n, g.k, g.dtype, g.elem_bytes);
    return h;
  }
};
CollectiveMatmulSite collectiveMatmulSite(const CollectiveMatmulMatch& m, const HardwareModel& model);
// `ring.chunks` >= 1 divides the shard's rows; `ring.directions` 2 only where t >= 3.
CollectiveMatmulEstimate estimateCollectiveMatmul(const CollectiveMatmulSite& site, const HardwareModel& model, RingShape ring);
// The shapes the pass may choose from for a site: `chunks` (0: any of 1, 2, 4) dividing the shard's
// rows, `directions` (0: either; 2 on a ring of 2 is one way: its neighbours are one rank), `route`
// (0: either; 1: ring; 2: direct, for a reduce-scatter; an all-gather's is always the ring).
std::vector<RingShape> ringCandidates(const CollectiveMatmulMatch& m, int64_t chunks, int directions, int route);
// Empty when the decomposition pays; else why not, in words when `explaining`.
Refusal collectiveMatmulCostRefusal(const CollectiveMatmulEstimate& e, bool explaining);
// The figures of an accepted site, for --explain.
std::string collectiveMatmulExposure(const CollectiveMatmulEstimate& e);

}  // namespace spopt
