#pragma once
// Loads a format-v1 job with simdjson's on-demand API. A regular file is mapped, not read; a scan
// finds each program, threads parse programs as they are found, and every text the IR keeps (names,
// interned attrs and dist_attrs) is copied into the job's arenas, so the parsed bytes are handed
// back as the parse goes: peak memory is the IR plus a window, well under twice the file.
#include <memory>
#include <string>

#include "ir/ir.h"

namespace spopt {

struct LoadOptions {
  bool resolve = true;  // resolve var references and build def-use (dangling names are errors)
};

// `path` "-" reads standard input. Throws InputError with the file and JSON pointer.
std::unique_ptr<Job> loadJob(const std::string& path, const LoadOptions& opts = {});
std::unique_ptr<Job> loadJobFromText(std::string_view text, const std::string& display_name,
                                     const LoadOptions& opts = {});

}  // namespace spopt
