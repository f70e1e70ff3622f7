#pragma once
// Structural and semantic checks of a job: the invariants every pass must keep.
#include <vector>

#include "ir/ir.h"
#include "support/error.h"

namespace spopt {

struct VerifyOptions {
  bool shapes = true;       // op shape rules (collectives here; every other op by its catalogue definition, ops/op_verify.h)
  bool collectives = true;  // same collective sequence on every member rank of each ring
  size_t max_problems = 50;
  // What a journaled pass changed (ir.h EditJournal): check only that and the job-wide rules it
  // bears on; null: the whole job.
  const EditJournal* touched = nullptr;
};

// Every problem found (up to max_problems), each with the file and a JSON pointer.
std::vector<Diagnostic> verifyJob(const Job& job, const VerifyOptions& opts = {});

}  // namespace spopt

