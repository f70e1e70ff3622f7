#pragma once
// Loads a job and verifies it, as every command that works on a job it trusts (rewrite, replay,
// check) starts. Here, above both layers: the verifier does not know how jobs are read.
#include <memory>
#include <string>

#include "io/loader.h"
#include "support/error.h"
#include "verify/verifier.h"

namespace spopt::app {

// Throws InputError / InputErrors (exit 2) on any problem.
inline std::unique_ptr<Job> loadVerifiedJob(const std::string& path, const VerifyOptions& opts = {}) {
  auto job = loadJob(path);
  auto problems = verifyJob(*job, opts);
  if (!problems.empty()) throw InputErrors(std::move(problems));
  return job;
}

}  // namespace spopt::app
