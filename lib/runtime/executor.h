#pragma once
// Runs one rank's program (block 0) on a Communicator: a thread per execution stream, ops of a
// stream in program order, cross-stream dependencies as stream_plan.h states them (one stream,
// and so no extra thread, when no op names another).
//
// Each op output is allocated from its var's declared dtype and shape; compute ops run their
// kernel (findKernel), collectives go through the communicator. A var's buffer is released once
// every op that uses it, on every stream, has finished; fetched and persistable vars live to the
// end, so peak memory follows the program's liveness.
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/liveness.h"
#include "ir/ir.h"
#include "runtime/cpu_budget.h"
#include "runtime/communicator.h"
#include "runtime/tensor.h"

namespace spopt::rt {

struct ExecOptions {
  uint64_t seed = 0;
  std::string inputs_dir;  // DIR/VARNAME.npy replaces the generated value where present
  bool trace = false;      // record an event per op
  // Run every op on one thread in program order, whatever execution_stream says (the reference
  // a streamed replay must equal bit for bit).
  bool single_stream = false;
  // Bounds an op's wait for another stream of its rank (stream_plan.h) while no stream of the
  // rank makes progress; collectives are bounded by the backend's own timeout.
  std::chrono::milliseconds timeout{60'000};
};

struct TraceEvent {
  std::string name;      // op type
  bool collective = false;
  int64_t index = 0;     // op position in block 0
  double start_us = 0, dur_us = 0;  // from the start of the rank's program
  int64_t ring = -1;
  int64_t bytes = 0;     // collective input bytes
  std::string stream = "default";  // execution stream (a track of its own in the Chrome trace)
};

struct RankRun {
  int64_t rank = 0;
  std::vector<std::pair<std::string, Tensor>> kept;  // fetched vars, then persistable vars (declaration order)
  double seconds = 0;
  size_t peak_bytes = 0;  // most bytes held by live var buffers at once
  std::vector<TraceEvent> events;
  // The streams whose thread runs only communication, and what the scheduler granted each
  // (cpu_budget.h favourCommunicationThread); empty for a one-stream replay.
  std::vector<std::pair<std::string, CommThreadFavour>> favoured;
};

// Buffer liveness of the entry block, from the shared analysis (analysis/liveness.h): which vars
// die after each op (release_after) and which are program inputs (inputs). Replay releases by it.
// The CPU executor honours no-need-buffer slots (a released var read shape-only gets a shape-only
// tensor); the nccl device executor passes no_need_buffer=false (its device kernels take buffers).
BlockLiveness computeLiveness(const Program& p, const LivenessOptions& o = {});

// Throws InputError naming op, rank, block and index when replay cannot run `p`: an op with no
// kernel that is not a collective, an op outside block 0's reach, or a var with an unknown (-1) dim.
void checkReplayable(const Program& p);
// Before any per-program check: when the job's programs hold more than one op outside the replay
// catalogue (an imported Paddle program: conv2d, batch_norm, ...), one line names every type once
// with its count, "not replayable: conv2d x53, batch_norm x53 (106 ops of 2 types ...)", instead
// of naming the first op.
void checkOpsReplayable(const Job& job);

RankRun executeProgram(const Program& p, Communicator& comm, const ExecOptions& o);

// The value of program input `v` on `rank`: DIR/NAME.npy from o.inputs_dir when present (its
// global or local shape), else the generated one (runtime/inputs.h). Shared with the nccl
// backend's device executor, which fills inputs on the host and copies them up.
Tensor programInput(const Var& v, int64_t rank, const ExecOptions& o);

// The entry block of `p` (parent_idx < 0), whose ops replay runs in order.
const Block& entryBlock(const Program& p);

}  // namespace spopt::rt
