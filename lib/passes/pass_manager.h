#pragma once
// Runs a pipeline over a job (in the manner of MLIR's PassManager / XLA's HloPassPipeline):
// each pass in order, timed, then the verifier. A pass that leaves the job failing the verifier
// stops the pipeline; the caller must then write nothing (exit 3).
#include <functional>
#include <string>
#include <vector>

#include "passes/pipeline.h"
#include "support/error.h"
#include "verify/verifier.h"

namespace spopt {

struct PassRun {
  std::string name;      // the pass
  std::string text;      // as configured: name{opt=val}
  double time_ms = 0;    // the pass itself
  double verify_ms = 0;  // the verifier after it
  bool changed = false;  // what the pass said of its run
  PassStats stats;
  std::vector<ExplainRecord> explain;
};

struct PipelineResult {
  std::vector<PassRun> runs;  // passes that ran, in order (the failing one last)
  bool ok = true;
  std::string failed_pass;              // when !ok
  std::vector<Diagnostic> problems;     // what the verifier found after it
};

struct PassManagerOptions {
  bool collect_explain = false;
  bool collect_statistics = true;  // PassContext::collectingStatistics
  bool verify_each = true;  // off only in unit tests that inspect a broken job
  // Called after each pass (and its verification) with the pass name: --print-after.
  std::function<void(const std::string& pass, const Job&)> after_pass;
  // The rings' issue orders the job's own check left (VerifyOptions::issue_orders), kept up to
  // date by the check after each pass; null: the first check after a pass finds them.
  IssueOrders* issue_orders = nullptr;
};

PipelineResult runPipeline(const Pipeline& pipeline, Job& job, const PassManagerOptions& opts = {});

}  // namespace spopt
