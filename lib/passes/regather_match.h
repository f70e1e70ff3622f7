#pragma once
// The pattern of regather-activations, apart from the decision and the rewrite: a forward
// all-gather (c_allgather X/Out or all_gather x/out) whose gathered output G is read in forward
// and again, by buffer, in backward (typically matmul_v2_grad's X for the weight gradient), while
// its input S (the sequence shard) is still intact when backward needs G.
//
// matchRegather looks at one all-gather on one rank and returns either the match (where the new
// all-gather goes and which ops read from it) or a refusal {code, reason}. Whether every member rank
// of the ring agrees, and whether it pays off, is the pass's business. Linear: O(uses of G and S)
// per candidate, each op's block ancestry walked once (sub-block depth).
//
// "Shard still available": S is declared where the new all-gather can see it, and no op writes S
// (plain or in-place) after the forward all-gather and before the insertion point; a write after the
// insertion point is harmless. A write whose order relative to the insertion point cannot be told
// (inside the same sub-block-owning op) refuses.
// "Insertion point": before the first backward buffer reader of G. When every backward buffer
// reader sits in one sub-block, the new op goes into that sub-block before the first of them;
// otherwise into the all-gather's block, before the op that (through its sub-blocks) runs the first
// reader.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/collectives.h"
#include "ir/ir.h"
#include "passes/refusal.h"
#include "passes/regather_memory.h"

namespace spopt {

// Which op of a program runs each sub-block (attr sub_block / blocks), for one program.
class BlockOwners {
 public:
  explicit BlockOwners(const Program& p);
  // The op of `b` that runs `op` (op itself when it is in `b`, else the op owning the sub-block
  // chain that holds it); null when `op` is not in `b` or one of its descendants.
  const Op* anchorIn(const Op* op, const Block* b) const;

 private:
  std::vector<const Op*> owner_;  // [block position] -> owning op, or null
};

struct RegatherMatch {
  Op* allgather = nullptr;
  Collective coll{};
  Var* shard = nullptr;     // S: the all-gather's input
  Var* gathered = nullptr;  // G: its output; keeps only its forward readers
  Op* insert_before = nullptr;  // the new all-gather goes right before this op
  std::vector<Op*> backward_readers;  // ops reading G's buffer in backward: redirected
  // Entry-block positions for the memory model (-1: not modelled, G or S outside the entry block):
  int64_t ag_at = -1;        // the forward all-gather
  int64_t last_fwd_at = -1;  // G's last forward buffer use (>= ag_at)
  int64_t insert_at = -1;    // the insertion point
  int64_t last_bwd_at = -1;  // the last backward buffer reader
};

struct RegatherResult {
  bool candidate = false;  // a forward all-gather: counted in the pass's stats
  std::optional<RegatherMatch> match;
  Refusal refusal;         // when candidate && !match
};

// Backward for this pass: op_role Backward or the loss-grad seed.
bool isBackwardOp(const Op& op);

RegatherResult matchRegather(Op& allgather, const Collective& coll, const BlockOwners& owners, bool explaining);

// Applies (sign +1) or undoes (-1) one re-gather in a rank's memory model (regather_memory.h);
// `dies`: the entry block's BlockLiveness::dies_after. Only for matches with ag_at >= 0.
void applyRegatherModel(LiveBytesTree& tree, const std::vector<int32_t>& dies, const RegatherMatch& m, int sign);
// The rewrite on one rank: the new all-gather (same type, attrs and dist_attr, phase backward) of
// the shard into a fresh `G@regather` before m.insert_before; backward readers redirected to it.
void rewriteRegather(const RegatherMatch& m);

}  // namespace spopt
