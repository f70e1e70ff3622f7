// sp-opt import FILE... [--startup FILE...] [--ring ID=R0,R1,...] -o job.json: Paddle programs
// (one per rank, in rank order) -> one format-v1 job (lib/io/paddle, docs/paddle.md).
#include <cstdio>
#include <iostream>
#include <memory>

#include "command.h"
#include "io/paddle/assemble.h"
#include "io/paddle/formats.h"
#include "support/error.h"
#include "write_output.h"

namespace spopt::app::cmd_import {
namespace {

struct Options {
  std::vector<std::string> files, startups, rings;
  std::string from, output = "-";
};

// "3=0,2,4" -> ring 3 with members 0, 2, 4 in position order.
std::pair<int64_t, std::vector<int64_t>> parseRing(const std::string& spec) {
  auto bad = [&](const std::string& why) { return InputError("--ring " + spec, "", why + " (expected ID=R0,R1,...)"); };
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) throw bad("no '='");
  auto number = [&](const std::string& s) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      throw bad("'" + s + "' is not a number");
    }
    if (used != s.size() || v < 0) throw bad("'" + s + "' is not a non-negative number");
    return v;
  };
  int64_t id = number(spec.substr(0, eq));
  std::vector<int64_t> ranks;
  std::string rest = spec.substr(eq + 1);
  for (size_t start = 0;;) {
    size_t comma = rest.find(',', start);
    ranks.push_back(number(rest.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {id, ranks};
}

int runImport(const Options& o) {
  paddle::AssembleOptions assemble;
  for (const auto& spec : o.rings) {
    auto [id, ranks] = parseRing(spec);
    if (!assemble.rings.emplace(id, ranks).second) throw InputError("--ring " + spec, "", "ring given twice");
  }
  std::vector<paddle::ImportedProgram> mains;
  for (const auto& f : o.files) mains.push_back(paddle::readProgramFile(f, o.from));
  for (const auto& f : o.startups) assemble.startups.push_back(paddle::readProgramFile(f, o.from));
  std::vector<std::string> notes;  // said once the job is written: a refused import says one line
  for (const auto* programs : {&mains, &assemble.startups})
    for (const auto& p : *programs) notes.insert(notes.end(), p.notes.begin(), p.notes.end());
  paddle::Json job = paddle::assembleJob(std::move(mains), assemble);
  std::string text;
  try {
    text = job.dump();
  } catch (const nlohmann::json::type_error& e) {
    // Names are the only strings not checked for UTF-8 on the way in (attrs keep bytes as hex).
    throw InputError(o.files.front(), "", std::string("a name is not UTF-8: ") + e.what());
  }
  // Freeing a million JSON nodes costs more than the exit that makes it unnecessary.
  keepUntilExit(std::make_unique<paddle::Json>(std::move(job)));
  text += '\n';
  writeOutput(o.output, text);
  for (const auto& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  return kExitOk;
}

const Registrar reg{{"import", "Read Paddle programs (one per rank) into one job: " + paddle::formatNames(),
                     "sp-opt import main_program.txt{0..3} --startup start_program.txt{0..3} -o job.json",
                     [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("files", o->files, "Main programs, one per rank, in rank order")->required();
                       sub.add_option("--startup", o->startups,
                                      "Startup programs, one per rank in the same order: their c_comm_init ops give the rings");
                       sub.add_option("--ring", o->rings, "A ring by hand: ID=R0,R1,... (members in position order)");
                       sub.add_option("--from", o->from, "Input format (default: detected from content): " + paddle::formatNames());
                       sub.add_option("-o,--output", o->output, "Output job (- for stdout)");
                       return [o] { return runImport(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_import
