#pragma once
// Results of checks on jobs (validate's checks, ci's gates) in the formats CI systems read:
//  - text: one line per problem ("FILE: /pointer: message"), as every command prints them;
//  - json: {"suites": [{"name", "cases": [{"name", "status", "messages"...}]}]};
//  - junit: JUnit XML as Jenkins, GitLab and the GitHub test-report actions read it: a
//    <testsuite> per job, a <testcase> per check (and per rank), a <failure message=...> per
//    failed one, warnings in <system-out>;
//  - github: GitHub Actions workflow commands, one "::error file=F,title=T::message" (or
//    ::warning) per problem, which the Actions UI shows on the run and the file.
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"

namespace spopt {

struct CheckCase {
  std::string name;  // "hang-free", "peak_memory rank 1"
  enum Status { Passed, Failed, Skipped } status = Passed;
  std::vector<Diagnostic> failures;
  std::vector<Diagnostic> warnings;  // do not fail the case
  std::string detail;                // a passing case's one-line result ("1.2 GiB <= 2 GiB")
  double seconds = 0;
  // Numbers behind a gate, for the json format: {"value", ...}, {"limit", ...}, {"baseline", ...}.
  std::vector<std::pair<std::string, double>> figures;
};

struct CheckSuite {
  std::string name;  // the job file
  std::vector<CheckCase> cases;
  bool failed() const;
};

std::string renderChecksText(const std::vector<CheckSuite>& suites);  // problems and warnings
std::string renderChecksJson(const std::vector<CheckSuite>& suites);
std::string renderChecksJunit(const std::vector<CheckSuite>& suites);
std::string renderChecksGithub(const std::vector<CheckSuite>& suites);
// The rendering named by --format (text, json, junit, github).
std::string renderChecks(const std::string& format, const std::vector<CheckSuite>& suites);

// XML character data and attribute values: & < > " ' escaped, characters XML 1.0 forbids dropped.
std::string xmlEscape(const std::string& s);

}  // namespace spopt
