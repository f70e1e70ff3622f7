#pragma once
// Which execution stream runs each op of a rank's entry block, and what each op waits for on the
// other streams: the host replay's version of Paddle's standalone-executor semantics.
//
// An op runs on the stream its dist_attr names (`execution_stream`, "default" = stream 0, the
// compute stream). Ops of one stream run in program order. Across streams an op waits until
//  - the last writer of each var it reads has finished (true dependency),
//  - the last writer and every reader since of each var it writes have finished (output and
//    anti dependency: replay gives an output a fresh buffer, so an in-place write must not
//    replace a value another stream has still to read),
//  - the op that last recorded each event it names in `events_to_wait` has finished (an event
//    recorded later in program order, or never, is not waited for: CUDA's rule for an event not
//    yet recorded, which the nccl backend follows),
//  - the previous collective of its ring has finished (a ring's collectives are issued in program
//    order on every rank, so they pair by issue order whatever stream each is on).
// A member of a fused buffer (runtime/fused_views.h) counts as the buffer in these rules.
// `depend` and `nop` need nothing more: their inputs make them wait like any op.
// Every wait points to an op earlier in program order, so a program that replays on one stream
// cannot deadlock on several.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "runtime/fused_views.h"

namespace spopt::rt {

struct StreamWait {
  uint32_t stream = 0;  // the other stream
  uint32_t count = 0;   // ... has finished its first `count` ops
  size_t op = 0;        // the op that is waited for (for messages): position in the block
};

struct StreamPlan {
  std::vector<std::string> names;            // by stream index; names[0] == "default"
  std::vector<const Op*> ops;                // the entry block in program order
  std::vector<uint32_t> stream_of;           // by op position
  std::vector<std::vector<size_t>> ops_of;   // by stream: op positions in program order
  std::vector<std::vector<StreamWait>> waits;  // by op position: at most one per other stream
  // by Var::id: ops that read the var's buffer or write it (a shape-only read through a
  // no-need-buffer slot, the catalogue's no-need-buffer operands, ops/op_def.h, is not a use: the buffer may be gone by then)
  std::vector<uint32_t> uses;
  std::vector<char> is_input;                // by Var::id: read before any op writes it
  bool multi() const { return names.size() > 1; }
};

// `honour_streams` false puts every op on stream 0 (a single-stream replay of the same program).
// `fused`: the entry block's fused buffers, as the executor keeps them in step. Linear in the
// program size (times the number of streams, a handful).
StreamPlan planStreams(const Program& p, const Block& entry, bool honour_streams, const FusedViews& fused);

}  // namespace spopt::rt
