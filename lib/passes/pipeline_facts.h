#pragma once
// Every op's facts (analysis/op_facts.h) for a whole pipeline, as MLIR's analysis manager keeps an
// analysis that passes preserve: read in full by the first pass that asks, then brought up to date
// from each journaled pass's journal (ir/ir.h) when the next pass asks, so a chain's last pass
// costs no refresh and a pass that asks nothing costs no read.
#include <optional>

#include "analysis/op_facts.h"
#include "ir/ir.h"

namespace spopt {

class PipelineFacts {
 public:
  // The facts of the job as it is now. A pass asks before its first erase: the previous pass's
  // journal, read here, names ops an erase may have freed (asked after one, every op is read).
  OpFactsCache& current(const Job& job);
  // current(job) with the asking pass's own edits so far read in: its journal's records since its
  // last such call, or, with no journal attached, every op read again.
  OpFactsCache& afterOwnEdits(const Job& job);
  // By the pass manager after each pass: whether it changed the job, and its journal when it kept
  // a whole one (moved in, read when the next pass asks). A changed job without one, or a second
  // journal before the first was read, leaves every op to be read again.
  void passEnded(bool changed, EditJournal* journal);

 private:
  void readEveryOp(const Job& job);

  OpFactsCache cache_;
  bool complete_ = false;  // every op of the job has been read
  std::optional<EditJournal> pending_;  // the last pass's edits, not read yet
  OpFactsCache::JournalCursor pending_read_;  // how much of pending_ its own pass read already
  OpFactsCache::JournalCursor own_read_;      // how much of the running pass's journal is read
};

}  // namespace spopt
