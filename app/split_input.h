#pragma once
// --split-input-file, as mlir-opt's: the input holds several cases separated by lines that read
// `// -----`; each case is loaded and handled on its own and the outputs come in order, separated
// by the same line. A pass test file (tests/passes/) is such an input: one case per pattern, with
// its CHECK lines beside it.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace spopt::app {

inline constexpr std::string_view kCaseSeparator = "// -----";

// The cases of `text`. Each is padded with one newline per line before it, so that an error's
// FILE:LINE:COL names the line of the whole file.
std::vector<std::string> splitInputCases(std::string_view text);

// Loads each case of the file at `path` as a job named `path` and runs `one` on it, which returns
// an exit code and sets the case's output. Outputs go to `out` ("-": stdout, each as its case ends,
// so that a case's stderr lines stay beside its output under `2>&1`; "": nowhere). A case that
// fails prints its error as a whole command would (one line, FILE:LINE:COL) and leaves its place
// empty; the other cases still run. Returns the worst exit code of the cases.
using CaseRunner = std::function<int(std::unique_ptr<Job> job, std::string& output)>;
int forEachInputCase(const std::string& path, const std::string& out, const CaseRunner& one);

}  // namespace spopt::app
