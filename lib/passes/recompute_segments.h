#pragma once
// The candidates of recompute-activations on one rank, apart from the policy that picks among
// them: the saved activations (vars a forward op makes and a backward op reads by buffer, the ones
// Korthikanti et al. count), and for each the forward segment that can make it again in backward
// from what forward keeps anyway.
//
// A saved var t is recomputable when walking back from it through its producers reaches only
// "kept" vars (persistable, kept to the end, or saved themselves) along ops that
//  - are forward ops of the entry block, each var written once,
//  - pass the catalogue's recompute rule (ops/recompute_rule.h: no collective, no side effects, a
//    random op only with a seed a copy draws again), and
//  - the policy allows (core attention, a user's op patterns, or any).
// Candidates whose walks share an op are one finest segment (the dropout output and its mask: one
// op makes both). Finest segments where one reads the other's var are joined in a graph
// (recompute_subsets.h): for core-attention and list a connected component is one segment, the
// maximal forward segment (softmax output, dropout mask and output: recomputing one without the
// other would keep what it was meant to free); the budget policy is offered every finest segment
// and the connected sub-chains of each component, each in conflict with the ones it overlaps or
// touches. A segment is copied, in program order, right before the first backward reader of any
// of its vars; the backward buffer readers then read the copies (recompute_rewrite.cpp,
// rewriteSegment), and the forward vars die after forward.
//
// Memory model (for the budget policy; regather_memory.h's tree over two slots per entry-block op:
// the gap before op i, where copies inserted before it run, and op i itself): choosing a segment
// inserted before op `ins` changes a rank's live bytes by
//   -bytes(t) on the slots from the gap after t's last forward use to the gap before ins, for
//             each var t it recomputes (its copy is live again at ins itself, as t was)
//   +bytes(a) from the gap after a's death to the gap before ins, for each kept var a it reads
//             that died earlier
//   +copy_peak in the gap before ins: the most bytes its copies hold at once while they run, the
//             temporaries each freed after its last reader among the copies (exact for one
//             segment; segments sharing an insertion point add up, an upper bound)
// The pass re-profiles the rewritten program for the peaks it reports.
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "analysis/liveness.h"
#include "analysis/memory.h"
#include "ir/ir.h"
#include "passes/refusal.h"
#include "passes/regather_memory.h"

namespace spopt {

struct SavedVar {
  Var* var = nullptr;
  Op* producer = nullptr;
  size_t producer_at = 0;
  int64_t last_fwd_at = -1, first_bwd_at = -1;
  Refusal refusal;   // empty: part of segment `segment`
  int segment = -1;
};

struct Segment {
  std::vector<Op*> ops;          // program order
  std::vector<size_t> targets;   // indices into RankSegments::saved
  std::vector<Var*> anchors;     // what the copies read from forward
  Op* insert_before = nullptr;
  int64_t insert_at = 0;
  int64_t bytes = 0;             // bytes of the vars it recomputes
  int64_t copy_peak = 0;         // the most bytes its copies hold at once while they run
  double flops = 0;              // the cost model's FLOPs of one run of its ops
  std::string text;              // "matmul_v2 > scale > softmax > dropout"
  // Budget candidates that overlap this one or recompute a var it reads (or read one it
  // recomputes): never chosen together (recompute_subsets.h).
  std::vector<size_t> conflicts;
};

struct RankSegments {
  Program* program = nullptr;
  std::vector<SavedVar> saved;   // entry-block program order of their producers
  // Shape::Maximal: one per component. Shape::Budget: the finest segments first (SavedVar::segment
  // indexes them), then the sub-chains of two or more.
  std::vector<Segment> segments;
  Liveness live;
  // The model's slots: [2i] the gap before entry-block op i (what op i-1 left live), [2i+1] op i
  // (analysis/memory.h's live_at). Their max is the profile's peak.
  std::vector<int64_t> slots;
  int64_t peak = 0;
};

enum class SegmentShape {
  Maximal,  // one segment per component (core-attention, list, all)
  Budget,   // the finest segments and the connected sub-chains of each component, with conflicts
};
// Sub-chains of two or more finest segments offered per component (the whole is offered besides).
inline constexpr size_t kSubChainsPerComponent = 30;

// `allowed`: whether the policy lets a segment contain this forward op.
RankSegments findSegments(Program& p, const std::function<bool(const Op&)>& allowed, bool explaining,
                          SegmentShape shape = SegmentShape::Maximal);
// The model's slots (RankSegments::slots) from the entry block's profile and liveness.
std::vector<int64_t> modelSlots(const MemoryProfile& prof, const BlockLiveness& entry);
// The most bytes `ops` (a segment's copies, program order) hold at once while they run: each
// output from its op on, freed after its last reader among them unless it is one of `targets`.
int64_t copyPeakBytes(const std::vector<Op*>& ops, const std::unordered_set<const Var*>& targets);
// Applies (+1) or undoes (-1) a segment in the rank's memory model.
void applySegmentModel(LiveBytesTree& tree, const RankSegments& r, const Segment& s, int sign);
// Copies the segment before its insertion point and points the backward readers at the copies.
void rewriteSegment(RankSegments& r, const Segment& s);

}  // namespace spopt
