#include "passes/pass_manager.h"

#include <chrono>

#include "verify/issue_orders.h"
#include "verify/verifier.h"

namespace spopt {
namespace {
double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

PipelineResult runPipeline(const Pipeline& pipeline, Job& job, const PassManagerOptions& opts) {
  PipelineResult result;
  KnownAnalyses known;  // of the job as the next pass gets it
  IssueOrders own_orders;
  IssueOrders& issue_orders = opts.issue_orders ? *opts.issue_orders : own_orders;  // as the last check left them
  PipelineFacts facts;  // every op's, read by the first pass that asks (PassContext::facts)
  for (const ConfiguredPass& cp : pipeline) {
    PassRun run;
    run.name = cp.info->name;
    run.text = cp.text();
    PassContext ctx(opts.collect_explain, &cp.info->statistics, opts.collect_statistics);
    KnownAnalyses given = known;
    // The verifier's orders hold while every pass is checked after it: then they describe the job
    // as it is now. Copied out only for a pass that asks (ctx.receivedRingOrder).
    if (opts.verify_each && issue_orders.state && issue_orders.state->job == &job)
      given.issue_lists = [&issue_orders] { return issueLists(*issue_orders.state); };
    ctx.receive(std::move(given));
    ctx.shareFacts(&facts);
    auto pass = cp.info->create(cp.options);
    EditJournal journal;
    struct Attach {  // detached however the pass ends
      Job& job;
      ~Attach() { job.journal = nullptr; }
    } attach{job};
    if (opts.verify_each && cp.info->journaled) job.journal = &journal;
    auto t0 = std::chrono::steady_clock::now();
    run.changed = pass->run(job, ctx);
    run.time_ms = msSince(t0);
    job.journal = nullptr;
    // A pass that changed the job leaves only what it measured after its edits; one that changed
    // nothing leaves the job as it got it, so what was known still holds.
    if (run.changed) known = std::move(ctx.left);
    else
      for (size_t i = 0; i < ctx.left.peak_bytes.size(); ++i)
        if (ctx.left.peak_bytes[i]) known.setPeakBytes(i, *ctx.left.peak_bytes[i]);
    run.stats = std::move(ctx.stats);
    run.explain = std::move(ctx.explain);
    if (!opts.verify_each) issue_orders.state.reset();  // no check brings them up to date
    if (opts.verify_each) {
      auto t1 = std::chrono::steady_clock::now();
      VerifyOptions vopts;
      if (cp.info->journaled) vopts.touched = &journal;
      vopts.issue_orders = &issue_orders;
      auto problems = verifyJob(job, vopts);
      run.verify_ms = msSince(t1);
      if (!problems.empty()) {
        result.ok = false;
        result.failed_pass = run.name;
        result.problems = std::move(problems);
      }
    }
    facts.passEnded(run.changed, opts.verify_each && cp.info->journaled ? &journal : nullptr);  // after the check reads it
    result.runs.push_back(std::move(run));
    if (opts.after_pass) opts.after_pass(result.runs.back().name, job);
    if (!result.ok) break;
  }
  return result;
}

}  // namespace spopt
