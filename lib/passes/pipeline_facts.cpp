#include "passes/pipeline_facts.h"

namespace spopt {

void PipelineFacts::readEveryOp(const Job& job) {
  cache_.clear();
  cache_.readAll(job);
  complete_ = true;
  pending_.reset();
}

OpFactsCache& PipelineFacts::current(const Job& job) {
  if (!complete_) {
    readEveryOp(job);
  } else if (pending_) {
    if (job.journal && !job.journal->erased.empty()) readEveryOp(job);
    else cache_.refresh(*pending_, pending_read_);
    pending_.reset();
  }
  return cache_;
}

OpFactsCache& PipelineFacts::afterOwnEdits(const Job& job) {
  if (!job.journal) {
    readEveryOp(job);
    return cache_;
  }
  current(job);
  cache_.refresh(*job.journal, own_read_);
  return cache_;
}

void PipelineFacts::passEnded(bool changed, EditJournal* journal) {
  const OpFactsCache::JournalCursor read = own_read_;
  own_read_ = {};
  if (!changed || !complete_) return;
  if (!journal || pending_) {
    complete_ = false;
    pending_.reset();
    return;
  }
  pending_ = std::move(*journal);
  pending_read_ = read;
}

}  // namespace spopt
