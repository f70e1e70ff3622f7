#pragma once
// Structural and semantic checks of a job: the invariants every pass must keep.
#include <vector>

#include "ir/ir.h"
#include "support/error.h"

namespace spopt {

struct VerifyOptions {
  bool shapes = true;       // op shape rules (split, concat, matmul_v2, collectives)
  bool collectives = true;  // same collective sequence on every member rank of each ring
  size_t max_problems = 50;
};

// Every problem found (up to max_problems), each with the file and a JSON pointer.
std::vector<Diagnostic> verifyJob(const Job& job, const VerifyOptions& opts = {});

// JSON pointers to IR entities as they would be written now (positions skip removed vars).
std::string opPointer(const Op& op);
std::string varPointer(const Var& v);

}  // namespace spopt

#include <memory>
#include <string>
namespace spopt {
// Loads and verifies; throws InputError / InputErrors (exit 2) on any problem.
std::unique_ptr<Job> loadVerifiedJob(const std::string& path, const VerifyOptions& opts = {});
}  // namespace spopt
