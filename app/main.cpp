// sp-opt: optimise and prove distributed (tensor/sequence-parallel) programs.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "analysis/machine_model.h"
#include "command.h"
#include "io/atomic_file.h"
#include "io/source.h"
#include "io/temp_cleanup.h"
#include "runtime/calibrate.h"
#include "support/error.h"
#include "support/parallel.h"

namespace spopt::app {
std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}
std::vector<char*>& originalArgs() {
  static std::vector<char*> args;
  return args;
}

namespace {
// The first word of the command line that is no option, when it names no subcommand (the global
// options but --max-input-bytes take no value, so that word is where the subcommand should stand).
std::optional<std::string> unknownSubcommand(const CLI::App& cli, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") return std::nullopt;
    if (arg == "--max-input-bytes") ++i;
    if (arg.empty() || arg[0] == '-') continue;
    for (const CLI::App* sub : cli.get_subcommands({}))
      if (sub->check_name(std::string(arg))) return std::nullopt;
    return std::string(arg);
  }
  return std::nullopt;
}
// `--name=` names an empty value. CLI11 2.1 reads it as the option with no value and then takes
// the next word as its value (`rewrite --passes= in.json out.json --dry-run` read in.json as the
// pipeline), so the command line reaches it as `--name=` and this mark, which every option that
// takes a value turns back into the empty string (acceptEmptyValues, which returns their names).
// A flag's `--name=` stays as it was (the flag set), and words after `--` are positionals.
constexpr std::string_view kEmptyValue = "\x1f";
std::vector<std::string> argsForParse(int argc, char** argv, const std::set<std::string, std::less<>>& take_values) {
  int options_end = argc;
  for (int i = 1; i < argc && options_end == argc; ++i)
    if (std::string_view(argv[i]) == "--") options_end = i;
  std::vector<std::string> args;  // last word first, as CLI11 parses them
  for (int i = argc - 1; i >= 1; --i) {
    std::string arg = argv[i];
    if (i < options_end && arg.size() > 3 && arg.starts_with("--") && arg.find('=') == arg.size() - 1 &&
        take_values.contains(std::string_view(arg).substr(2, arg.size() - 3)))
      arg += kEmptyValue;
    args.push_back(std::move(arg));
  }
  return args;
}
void acceptEmptyValues(CLI::App& app, std::set<std::string, std::less<>>& names) {
  for (CLI::Option* opt : app.get_options())
    if (opt->get_items_expected_max() > 0 && !opt->get_positional()) {
      opt->transform([](std::string v) { return v == kEmptyValue ? std::string() : v; });
      for (const std::string& name : opt->get_lnames()) names.insert(name);
    }
  for (CLI::App* sub : app.get_subcommands({})) acceptEmptyValues(*sub, names);
}
// Every byte a command wrote to standard output must have arrived (a full disk, a closed pipe
// reader): checked once, here, at the end of every command. Lost output is exit 2, one line.
int checkStdoutAtExit(int code) {
  if (stdoutFailed()) return code;  // already reported by the command's error
  try {
    flushStdout();
  } catch (const InputError& e) {
    std::cerr << e.what() << '\n';
    return code == kExitOk || code == kExitDiffers ? kExitBadInput : code;
  }
  return code;
}
}  // namespace
}  // namespace spopt::app

int main(int argc, char** argv) {
  using namespace spopt;
  captureStdoutErrors();
  app::originalArgs().assign(argv, argv + argc);
  app::originalArgs().push_back(nullptr);
  auto& cmds = app::commands();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  CLI::App cli{"sp-opt: rewrite distributed tensor/sequence-parallel programs and prove the rewrite by replay"};
  cli.set_version_flag("--version", std::string("sp-opt ") + SPOPT_VERSION);
  cli.require_subcommand(1);
  int verbosity = 0;
  cli.add_flag("-v,--verbose", verbosity, "More log output (repeat for more)");
  bool quiet = false;
  cli.add_flag("-q,--quiet", quiet, "Only errors");
  // On the top level and on every subcommand, so that it may stand before or after the subcommand.
  uint64_t max_input_bytes = 0;
  auto addMaxInputBytes = [&](CLI::App& app) {
    app.add_option("--max-input-bytes", max_input_bytes,
                   "Most bytes read from a pipe, FIFO or other stream input (k/m/g suffixes; default half the "
                   "usable memory, here " + std::to_string(defaultMaxInputBytes()) + ")")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Validator([](std::string& v) { return v == "0" ? std::string("must be at least 1 byte") : std::string(); },
                               "", "at least 1"));
  };
  addMaxInputBytes(cli);
  size_t threads = 0;
  auto addThreads = [&](CLI::App& app) {
    app.add_option("--threads", threads,
                   "Most threads for loading a job and for a pass's per-rank work (default: every core, here " +
                       std::to_string(threadLimit()) + "); 1 runs everything on one core, as MLIR's --mlir-disable-threading")
        ->check(CLI::Range(size_t(1), size_t(1024)));
  };
  addThreads(cli);

  std::string footer = "\nExamples:\n";
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (const auto& c : cmds) {
    CLI::App* sub = cli.add_subcommand(c.name, c.summary);
    sub->footer("Example: " + c.example);
    runners.emplace_back(sub, c.setup(*sub));
    if (c.reads_input) addMaxInputBytes(*sub), addThreads(*sub);
    footer += "  " + c.example + "\n";
  }
  footer += "\nExit codes: 0 ok, 1 differs/fails a check, 2 bad input, 3 a pass broke an invariant.";
  cli.footer(footer);
  // Usage errors are bad input: one line, like every other error.
  cli.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("sp-opt: ") + e.what() + " (see sp-opt --help)\n";
  });

  try {
    cli.name(argv[0]);
    std::set<std::string, std::less<>> take_values;
    app::acceptEmptyValues(cli, take_values);
    cli.parse(app::argsForParse(argc, argv, take_values));
  } catch (const CLI::ParseError& e) {
    // CLI11 takes a word that names no subcommand for a stray argument and says only that a
    // subcommand is required: name the word instead.
    if (e.get_exit_code() != 0)
      if (auto word = app::unknownSubcommand(cli, argc, argv)) {
        std::cerr << "sp-opt: unknown subcommand \"" << *word << "\" (see sp-opt --help)\n";
        return kExitBadInput;
      }
    // --help and --version are "errors" with exit code 0; real usage errors are bad input.
    return app::checkStdoutAtExit(cli.exit(e) == 0 ? kExitOk : kExitBadInput);
  }

  if (threads) setThreadLimit(threads);
  auto logger = spdlog::stderr_color_mt("sp-opt");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("sp-opt: %^%l%$: %v");
  spdlog::set_level(quiet ? spdlog::level::err
                          : verbosity >= 2 ? spdlog::level::trace
                          : verbosity == 1 ? spdlog::level::debug
                                           : spdlog::level::warn);

  if (max_input_bytes) setMaxInputBytes(max_input_bytes);
  installTempCleanupHandlers();
  // Passes and analyze build `preset=host` through the analysis layer, which cannot measure.
  setHostMeasurer(&rt::hostFigures);

  int code = kExitBadInput;
  try {
    for (auto& [sub, fn] : runners)
      if (sub->parsed()) code = fn();
  } catch (...) {
    auto report = describeError(std::current_exception());
    std::cerr << report.text << '\n';
    code = report.code;
  }
  return app::checkStdoutAtExit(code);
}
