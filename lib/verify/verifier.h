#pragma once
// Structural and semantic checks of a job: the invariants every pass must keep.
#include <memory>
#include <vector>

#include "ir/ir.h"
#include "support/error.h"

namespace spopt {

// The rings' issue orders as the verifier last found them in one job, kept by the caller between
// checks (the pass manager, between passes): the check after a journaled pass then reads again
// only the collectives the pass inserted, edited, moved or erased, not every op of every program.
// A check given it leaves it describing the job as checked, or unknown where it found a problem.
struct IssueOrders {
  struct State;  // verify/issue_orders.h
  std::shared_ptr<State> state;  // null: unknown
};

struct VerifyOptions {
  bool shapes = true;       // op shape rules (collectives here; every other op by its catalogue definition, ops/op_verify.h)
  bool collectives = true;  // same collective sequence on every member rank of each ring
  size_t max_problems = 50;
  // What a journaled pass changed (ir.h EditJournal): check only that and the job-wide rules it
  // bears on; null: the whole job.
  const EditJournal* touched = nullptr;
  // Read (when it describes this job) and refreshed by the check; null: not kept.
  IssueOrders* issue_orders = nullptr;
};

// Every problem found (up to max_problems), each with the file and a JSON pointer.
std::vector<Diagnostic> verifyJob(const Job& job, const VerifyOptions& opts = {});

}  // namespace spopt

