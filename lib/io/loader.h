#pragma once
// Loads a format-v1 job with simdjson's on-demand API: one pass over the bytes, the IR viewing
// names and raw values in the loaded buffer, so that memory stays close to the file's size.
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
