#include "analysis/dynamic_dims.h"
#include "analysis/fused_buffers.h"
#include "job_checks.h"

#include <cstdio>
#include <chrono>
#include <map>

#include "io/loader.h"
#include "verify/verifier.h"

namespace spopt::app {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The rank a diagnostic's pointer ("/programs/P/...") is about, or -1 for the job as a whole.
int64_t rankOf(const Job& job, const std::string& pointer) {
  const std::string prefix = "/programs/";
  if (pointer.compare(0, prefix.size(), prefix) != 0) return -1;
  size_t p = 0;
  try {
    p = std::stoul(pointer.substr(prefix.size()));
  } catch (const std::exception&) {
    return -1;
  }
  return p < job.programs.size() ? job.programs[p]->rank : -1;
}

// One case per rank of the job (named "NAME rank R"), each failing with the rank's diagnostics,
// and one "NAME job" case when some diagnostic is about no single rank.
void addPerRank(CheckSuite& suite, const Job& job, const std::string& name, const std::vector<Diagnostic>& failures,
                const std::vector<Diagnostic>& warnings) {
  std::map<int64_t, CheckCase> cases;
  for (const auto& p : job.programs) cases[p->rank].name = name + " rank " + std::to_string(p->rank);
  for (const auto* list : {&failures, &warnings})
    for (const Diagnostic& d : *list) {
      int64_t r = rankOf(job, d.pointer);
      CheckCase& c = cases[r];
      if (r < 0) c.name = name + " job";
      (list == &failures ? c.failures : c.warnings).push_back(d);
    }
  for (auto& [rank, c] : cases) {
    c.status = c.failures.empty() ? CheckCase::Passed : CheckCase::Failed;
    suite.cases.push_back(std::move(c));
  }
}

}  // namespace

JobValidation validateJobFile(const std::string& file, bool strict) {
  JobValidation v;
  v.suite.name = file;
  auto t = Clock::now();
  try {
    v.job = loadJob(file);
  } catch (const InputError& e) {
    v.problems.push_back(e.diagnostic());
    v.suite.cases.push_back({"load", CheckCase::Failed, v.problems, {}, "", since(t), {}});
    return v;
  }
  v.load_s = since(t);
  const Job& job = *v.job;
  v.ranks = job.programs.size();
  for (const auto& p : job.programs)
    for (const auto& b : p->blocks) v.ops += b->ops.size();
  v.suite.cases.push_back({"load", CheckCase::Passed, {}, {}, std::to_string(v.ranks) + " ranks, " + std::to_string(v.ops) + " ops", v.load_s, {}});

  t = Clock::now();
  std::vector<Diagnostic> verify = verifyJob(job);
  v.verify_s = since(t);
  addPerRank(v.suite, job, "verify", verify, {});
  v.problems = verify;
  // The hang check pairs collectives across ranks: on a job the verifier rejects, its findings
  // would repeat the verifier's (a ring whose ranks issue different collectives).
  CheckCase hang{"hang-free", CheckCase::Skipped, {}, {}, "skipped: the job fails verification", 0, {}};
  if (verify.empty()) {
    t = Clock::now();
    v.hang = checkHangs(job);
    v.hang_s = hang.seconds = since(t);
    hang.status = v.hang.errors.empty() ? CheckCase::Passed : CheckCase::Failed;
    hang.failures = v.hang.errors;
    hang.detail = std::to_string(v.hang.nodes) + " ops, " + std::to_string(v.hang.edges) + " edges, " +
                  std::to_string(v.hang.instances) + " collective instances: no cycle";
    v.problems.insert(v.problems.end(), v.hang.errors.begin(), v.hang.errors.end());
    auto& lost_into = strict ? v.problems : v.warnings;
    lost_into.insert(lost_into.end(), v.hang.warnings.begin(), v.hang.warnings.end());
  }
  if (!hang.failures.empty()) hang.detail.clear();
  v.suite.cases.push_back(std::move(hang));
  if (verify.empty()) {
    const auto& lost = v.hang.warnings;
    addPerRank(v.suite, job, "events", strict ? lost : std::vector<Diagnostic>{}, strict ? std::vector<Diagnostic>{} : lost);
  }
  return v;
}

namespace {
void sizeWithNote(Job& job, const std::string& file, int64_t size, const char* use, bool note) {
  if (size_t n = sizeDynamicDims(job, size); n && note)
    std::fprintf(stderr, "note: %s: %zu var(s) have a dynamic dimension (-1), %s as %lld (--dynamic-dim N)\n",
                 file.c_str(), n, use, static_cast<long long>(size));
  if (size_t n = sizeFusedBuffers(job); n && note)
    std::fprintf(stderr, "note: %s: %zu coalesce_tensor buffer(s) declared [0], sized from what they fuse\n", file.c_str(), n);
}
}  // namespace

void sizeDynamicDimsForCosting(Job& job, const std::string& file, int64_t size) { sizeWithNote(job, file, size, "costed", true); }

void sizeDynamicDimsForReplay(Job& job, const std::string& file, int64_t size, bool note) {
  sizeWithNote(job, file, size, "replayed", note);
}

}  // namespace spopt::app
