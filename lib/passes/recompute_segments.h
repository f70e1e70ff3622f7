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
// Candidates whose walks share an op, or where one reads another's var, are one segment (the
// softmax output, the dropout mask and the dropout output of one attention): recomputing one
// without the other would keep what it was meant to free. The budget policy asks for finer
// segments: one that reads another's var conflicts with it instead of joining it. A segment is copied, in program order,
// right before the first backward reader of any of its vars; the backward buffer readers then read
// the copies (recompute_segments.cpp, rewriteSegment), and the forward vars die after forward.
//
// Memory model (for the budget policy; regather_memory.h's tree): choosing a segment changes a
// rank's live bytes by
//   -bytes(t) on (last forward use of t, insert)   for each var t it recomputes
//   +bytes(a) on (death of a, insert]               for each kept var a it reads that died earlier
//   +bytes(intermediates) at insert                 the copies' temporaries (an upper bound)
// The pass re-profiles the rewritten program for the peaks it reports.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/liveness.h"
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
  int64_t temp_bytes = 0;        // bytes its copies write besides those
  double flops = 0;              // the cost model's FLOPs of one run of its ops
  std::string text;              // "matmul_v2 > scale > softmax > dropout"
  // Segments that recompute a var this one reads (found with merge_dependent false): this one's
  // copies need the forward var, so the two are never chosen together.
  std::vector<size_t> conflicts;
};

struct RankSegments {
  Program* program = nullptr;
  std::vector<SavedVar> saved;   // entry-block program order of their producers
  std::vector<Segment> segments;
  Liveness live;
  std::vector<int64_t> live_at;  // analysis/memory.h's profile of the entry block
  int64_t peak = 0;
};

// `allowed`: whether the policy lets a segment contain this forward op. `merge_dependent`: a
// candidate that reads another's var joins its segment (else the two conflict: finer segments
// for the budget search, whose own insertion points may differ).
RankSegments findSegments(Program& p, const std::function<bool(const Op&)>& allowed, bool explaining,
                          bool merge_dependent = true);
// Applies (+1) or undoes (-1) a segment in the rank's memory model.
void applySegmentModel(LiveBytesTree& tree, const RankSegments& r, const Segment& s, int sign);
// Copies the segment before its insertion point and points the backward readers at the copies.
void rewriteSegment(RankSegments& r, const Segment& s);

}  // namespace spopt
