#pragma once
// Buffer liveness of a program, for every block: after which op each var's buffer dies. Replay
// (runtime/executor.cpp, nccl/device_executor.cpp) releases buffers by it, and the memory profile
// (analysis/memory.h) sums live bytes by it: one computation, linear in program size.
//
// Rules, per block B, for the vars declared in B (a var declared in an outer block is the outer
// block's business: a sub-block may run many times):
//  - A use at op i is a read or a write by op i. An op owning sub-blocks (attr `sub_block`: a
//    block idx, or `blocks`: an array of them) uses, at its own position, every var its sub-blocks
//    (recursively) read or write that is declared outside them.
//  - A read through a no-need-buffer slot (the catalogue's no-need-buffer operands, ops/op_def.h) is not a buffer read. With
//    LivenessOptions::no_need_buffer (the default), a var's buffer dies after its last buffer read
//    or write; later shape-only reads do not keep it. A var that is only ever read shape-only has
//    no buffer at all and is not listed. Without the option every read counts.
//  - Vars that are read before any write in B are B's inputs (in order of first read); the entry
//    block's inputs are the program inputs. They die like any other var.
//  - Persistable vars and the program's fetched vars never die (not listed).
#include <cstdint>
#include <span>
#include <vector>

#include <absl/functional/function_ref.h>

#include "ir/ir.h"

namespace spopt {

// The block indices an op runs as sub-blocks: attr sub_block (an int) or blocks (an int array).
std::vector<int64_t> subBlocksOf(const Op& op);

class OpFactsCache;

struct LivenessOptions {
  bool no_need_buffer = true;  // shape-only reads do not keep a buffer alive
  // Each op's phase and shape-only inputs, when given (a pass profiling one program several times
  // reads them once per op: op_facts.h); else read from the op and the catalogue.
  OpFactsCache* facts = nullptr;
};

// One list of vars per op, stored flat (two arrays for the block, not one vector per op): [i] is
// op i's list, in var id order.
struct VarLists {
  std::vector<uint32_t> start;  // size() + 1 offsets into vars (empty when there are no ops)
  std::vector<const Var*> vars;
  size_t size() const { return start.empty() ? 0 : start.size() - 1; }
  std::span<const Var* const> operator[](size_t i) const { return {vars.data() + start[i], vars.data() + start[i + 1]}; }
  bool operator==(const VarLists&) const = default;
};

struct BlockLiveness {
  const Block* block = nullptr;
  // [i]: the vars whose buffer dies after op i of the block (the op's index in block->ops).
  VarLists release_after;
  // Vars of this block read before written, in order of first read.
  std::vector<const Var*> inputs;
  // [i]: non-persistable vars whose buffer first appears at op i (first use is a write).
  VarLists born_at;
  // Non-persistable inputs that have a buffer (some op reads their data), in var id order.
  std::vector<const Var*> live_on_entry;
  // [Var::id] -> index of the op after which it dies, -1 when it never does (persistable, fetched,
  // untouched, declared in another block, or shape-only): O(1) lookups for passes.
  std::vector<int32_t> dies_after;
};

struct Liveness {
  std::vector<BlockLiveness> blocks;  // by Block::position
  const BlockLiveness& of(const Block& b) const { return blocks[b.position]; }
  const BlockLiveness& entry() const;  // the block with parent_idx < 0 (or the first)
};

// The entry block: the one with parent_idx < 0, else the first block. Empty programs: null.
const Block* entryBlockOf(const Program& p);
// One walk over every op of every block (plus one over each block's vars).
Liveness computeProgramLiveness(const Program& p, const LivenessOptions& o = {});
// The entry block's buffers as computeProgramLiveness(p, o).entry() has them, without building its
// lists (a peak needs each buffer's span only): f(var, born, dies) once per var of the entry block
// that has a buffer, in var id order; born: the op index of its first write (-1: live on entry),
// dies: the op index it dies after (-1: never). A persistable var is live on entry and never dies.
// Walks the entry block and the sub-blocks its ops own.
void forEachEntryBuffer(const Program& p, const LivenessOptions& o, absl::FunctionRef<void(const Var&, int32_t born, int32_t dies)> f);
// A var that never dies: persistable, fetched by its program, the loss (written by an op whose
// op_role is Loss: a training script fetches it at run time, which its saved program does not
// show), or, in a program that fetches nothing, a result (written and never read).
bool keptToEnd(const Var& v);

}  // namespace spopt
