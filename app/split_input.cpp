// --split-input-file: one file, several independent cases (app/split_input.h).
#include "split_input.h"

#include <algorithm>
#include <iostream>

#include "io/loader.h"
#include "io/source.h"
#include "support/error.h"
#include "write_output.h"

namespace spopt::app {

namespace {
bool isSeparatorLine(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
  return line == kCaseSeparator;
}
}  // namespace

std::vector<std::string> splitInputCases(std::string_view text) {
  std::vector<std::string> cases(1);
  size_t line_no = 0;
  for (size_t start = 0; start < text.size(); ++line_no) {
    size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    std::string_view line = text.substr(start, end - start);
    if (isSeparatorLine(line.substr(0, line.size() - (line.back() == '\n')))) {
      cases.emplace_back(line_no + 1, '\n');  // the next case starts on the next line
    } else {
      cases.back().append(line);
    }
    start = end;
  }
  return cases;
}

int forEachInputCase(const std::string& path, const std::string& out, const CaseRunner& one) {
  std::vector<std::string> cases = splitInputCases(readInputFile(path));
  bool to_stdout = out == "-";
  std::string collected;  // for a file: written whole at the end
  int worst = kExitOk;
  for (size_t i = 0; i < cases.size(); ++i) {
    // The separator before the case runs: its stderr lines (--explain) come after it under 2>&1.
    std::string piece = i ? std::string(kCaseSeparator) + "\n" : std::string();
    if (to_stdout) std::cout << piece << std::flush;
    std::string output;
    int code;
    try {
      code = one(loadJobFromText(cases[i], path), output);
    } catch (...) {
      ErrorReport report = describeError(std::current_exception());
      std::cerr << report.text << '\n';
      code = report.code;
    }
    // Exit codes rank as the CLI's: 0 ok < 1 differs < 2 bad input < 3 a pass broke an invariant.
    worst = std::max(worst, code);
    if (to_stdout)
      std::cout << output << std::flush;
    else
      collected += piece + output;
  }
  if (!to_stdout && !out.empty()) writeOutput(out, collected);
  return worst;
}

}  // namespace spopt::app
