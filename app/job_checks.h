#pragma once
// The checks `validate` runs on a job file, and `ci` runs first: load, the verifier (format,
// per-op rules, cross-rank agreement) and the hang check (analysis/hang_check.h), as problems
// and as a CheckSuite (a case per check and per rank) for the CI formats.
#include <memory>
#include <string>
#include <vector>

#include "analysis/hang_check.h"
#include "ir/ir.h"
#include "views/check_report.h"

namespace spopt::app {

struct JobValidation {
  std::unique_ptr<Job> job;            // null when it did not load
  std::vector<Diagnostic> problems;    // any makes the job invalid
  std::vector<Diagnostic> warnings;    // lost dependencies (problems under strict)
  size_t ranks = 0, ops = 0;
  HangReport hang;
  double load_s = 0, verify_s = 0, hang_s = 0;
  CheckSuite suite;  // named after the file
};

// Never throws InputError: a file that does not load is a failed "load" case.
JobValidation validateJobFile(const std::string& file, bool strict);

// Before costing a job: its dynamic dims (-1) take `size` (analysis/dynamic_dims.h), and a note on
// stderr says how many vars had one.
void sizeDynamicDimsForCosting(Job& job, const std::string& file, int64_t size);
// The same before replaying it; `note` false keeps stderr quiet (the mpi ranks that do not report).
void sizeDynamicDimsForReplay(Job& job, const std::string& file, int64_t size, bool note);

}  // namespace spopt::app
