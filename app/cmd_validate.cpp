// sp-opt validate FILE...: load and verify jobs, and prove them hang-free; one line per problem.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "io/atomic_file.h"
#include "job_checks.h"
#include "views/check_report.h"

namespace spopt::app::cmd_validate {
namespace {

struct Options {
  std::vector<std::string> files;
  std::string format = "text";
  bool strict = false;
  bool timings = false;
};

int runValidate(const Options& o) {
  nlohmann::ordered_json report = nlohmann::ordered_json::array();
  std::vector<CheckSuite> suites;
  bool all_ok = true;
  for (const auto& file : o.files) {
    JobValidation v = validateJobFile(file, o.strict);
    all_ok &= v.problems.empty();
    if (o.timings)
      std::fprintf(stderr, "%s: load %.3f s, verify %.3f s, hang check %.3f s (%zu ops, %zu edges)\n", file.c_str(), v.load_s,
                   v.verify_s, v.hang_s, v.hang.nodes, v.hang.edges);
    if (o.format == "json") {
      nlohmann::ordered_json entry{{"file", file}, {"valid", v.problems.empty()}, {"ranks", v.ranks}, {"ops", v.ops}};
      for (const auto* list : {&v.problems, &v.warnings}) {
        auto& items = entry[list == &v.problems ? "problems" : "warnings"] = nlohmann::ordered_json::array();
        for (const auto& d : *list) items.push_back({{"pointer", d.pointer}, {"message", d.message}});
      }
      report.push_back(entry);
    } else if (o.format == "text") {
      for (const auto& d : v.warnings) std::cerr << "warning: " << d.line() << '\n';
      if (v.problems.empty()) std::cout << file << ": valid (" << v.ranks << " ranks, " << v.ops << " ops)\n";
      for (const auto& d : v.problems) std::cerr << d.line() << '\n';
    } else {
      suites.push_back(std::move(v.suite));
    }
  }
  if (o.format == "json") writeStdout(report.dump(2) + "\n");
  else if (o.format != "text") writeStdout(renderChecks(o.format, suites));
  return all_ok ? kExitOk : kExitBadInput;
}

const Registrar reg{{"validate", "Check jobs against format v1 and the verifier's invariants, and prove them hang-free",
                     "sp-opt validate testdata/jobs/gen_mlp_tp4_sp.json", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("files", o->files, "Job files (- for stdin)")->required();
                       sub.add_option("--format", o->format, "text, json, junit (JUnit XML) or github (Actions workflow commands)")
                           ->check(CLI::IsMember({"text", "json", "junit", "github"}));
                       sub.add_flag("--strict", o->strict, "A lost dependency (a wait on an event not recorded before it) is an error");
                       sub.add_flag("--timings", o->timings, "Print the seconds of load, verify and hang check to stderr");
                       return [o] { return runValidate(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_validate
