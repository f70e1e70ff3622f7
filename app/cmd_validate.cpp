// sp-opt validate FILE...: load and verify jobs; one line per problem.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "command.h"
#include "io/atomic_file.h"
#include "io/loader.h"
#include "verify/verifier.h"

namespace spopt::app {
namespace {

struct Options {
  std::vector<std::string> files;
  std::string format = "text";
};

int runValidate(const Options& o) {
  nlohmann::ordered_json report = nlohmann::ordered_json::array();
  bool all_ok = true;
  for (const auto& file : o.files) {
    std::vector<Diagnostic> problems;
    size_t ops = 0, ranks = 0;
    try {
      auto job = loadJob(file);
      problems = verifyJob(*job);
      ranks = job->programs.size();
      for (const auto& p : job->programs)
        for (const auto& b : p->blocks) ops += b->ops.size();
      keepUntilExit(std::move(job));
    } catch (const InputError& e) {
      problems.push_back(e.diagnostic());
    }
    all_ok &= problems.empty();
    if (o.format == "json") {
      nlohmann::ordered_json entry{{"file", file}, {"valid", problems.empty()}, {"ranks", ranks}, {"ops", ops}};
      entry["problems"] = nlohmann::ordered_json::array();
      for (const auto& d : problems) entry["problems"].push_back({{"pointer", d.pointer}, {"message", d.message}});
      report.push_back(entry);
    } else if (problems.empty()) {
      std::cout << file << ": valid (" << ranks << " ranks, " << ops << " ops)\n";
    } else {
      for (const auto& d : problems) std::cerr << d.line() << '\n';
    }
  }
  if (o.format == "json") writeStdout(report.dump(2) + "\n");
  return all_ok ? kExitOk : kExitBadInput;
}

const Registrar reg{{"validate", "Check jobs against format v1 and the verifier's invariants",
                     "sp-opt validate testdata/jobs/gen_mlp_tp4_sp.json", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("files", o->files, "Job files (- for stdin)")->required();
                       sub.add_option("--format", o->format, "Output format")->check(CLI::IsMember({"text", "json"}));
                       return [o] { return runValidate(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app
