#pragma once
// A program's memory profile from its buffer liveness (analysis/liveness.h), for the entry block:
// the bytes held by live var buffers while each op runs, the peak, and what is live at the peak.
// Linear in program size (plus sorting the peak's live set), so a pass can recompute it after
// each change. Per rank: call it once per program.
//
// Counting: persistable vars of the entry block always; program inputs with a buffer from the
// start; any other var from the op that first writes it; a var stops counting after the op its
// buffer dies at (fetched vars never die). Shape-only vars (read only through no-need-buffer
// slots) hold no buffer and count 0.
#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/liveness.h"
#include "ir/ir.h"

namespace spopt {

// numel * dtypeSize; 0 when a dim is unknown (-1): see varBytesKnown.
int64_t varBytes(const Var& v);
inline bool varBytesKnown(const Var& v) { return v.numel() >= 0; }

struct MemoryProfile {
  // [i]: bytes live while op i of the entry block runs: its inputs and outputs included, the
  // buffers that die after it not yet freed.
  std::vector<int64_t> live_at;
  int64_t persistable_bytes = 0;  // counted in every live_at
  int64_t peak_bytes = 0;         // max of live_at (persistable_bytes + inputs when no ops)
  int64_t peak_op = -1;           // index of the first op at the peak; -1 when the block has no ops
  // The largest buffers live at the peak, largest first (ties: lower var id first), at most top_n.
  std::vector<std::pair<const Var*, int64_t>> largest_at_peak;
  // Vars counted as 0 bytes because of an unknown dim (entry block, in id order).
  std::vector<const Var*> unknown_size;
};

MemoryProfile profileMemory(const Program& p, const Liveness& live, size_t top_n = 10);
// profileMemory(p, computeProgramLiveness(p, o), 0).peak_bytes in one sweep: no per-op lists, each
// buffer's size read once. For passes that compare peaks before and after an edit.
// With `dies_after`: also each buffer's last op, [var id] -> op index in the entry block (-1: it
// never dies, or is not the entry block's), as computeProgramLiveness's dies_after has it.
int64_t peakBytes(const Program& p, const LivenessOptions& o = {}, std::vector<int32_t>* dies_after = nullptr);
// Computes the liveness too (with no-need-buffer slots honoured).
MemoryProfile profileMemory(const Program& p, size_t top_n = 10);

}  // namespace spopt
