// sp-opt print JOB: the job in its text form, one op per line (io/text_writer.h). The text loads
// back: every command that takes a job takes it.
#include <memory>

#include "command.h"
#include "io/loader.h"
#include "io/text_writer.h"
#include "support/error.h"
#include "split_input.h"
#include "write_output.h"

namespace spopt::app::cmd_print {
namespace {

struct Options {
  std::string job;
  std::optional<int64_t> rank;
  std::string output = "-";
  bool split_input_file = false, spmd = false;
};

std::string printed(const Options& o, const Job& job) {
  if (o.rank && !job.program(*o.rank))
    throw InputError(o.job, "/programs", "no program for rank " + std::to_string(*o.rank) + " (--rank)");
  TextWriteOptions opts;
  opts.rank = o.rank;
  opts.fold_ranks = o.spmd;
  return jobToText(job, opts);
}

int runPrint(const Options& o) {
  if (o.split_input_file)
    return forEachInputCase(o.job, o.output, [&](std::unique_ptr<Job> job, std::string& output) {
      output = printed(o, *job);
      keepUntilExit(std::move(job));
      return kExitOk;
    });
  auto job = loadJob(o.job);
  writeOutput(o.output, printed(o, *job));
  keepUntilExit(std::move(job));
  return kExitOk;
}

const Registrar reg{{"print", "Print a job as text, one op per line (readable, and loadable by every command)",
                     "sp-opt print testdata/jobs/gen_mlp_tp4_sp.json --rank 2", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("job", o->job, "Job file, JSON or text (- for stdin)")->required();
                       sub.add_option("--rank", o->rank, "Print only this rank's program (the header stays whole)");
                       sub.add_option("-o,--output", o->output, "Output file (default stdout)");
                       sub.add_flag("--spmd", o->spmd,
                                    "Fold consecutive ranks with the same program into one `rank A..B` section "
                                    "(the SPMD shorthand; docs/text-format.md)");
                       sub.add_flag("--split-input-file", o->split_input_file,
                                    "JOB holds cases separated by \"// -----\" lines: print each alone, separated the same way");
                       return [o] { return runPrint(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_print
