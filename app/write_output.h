#pragma once
// Writes a command's whole output atomically ("-" = stdout). An output that cannot be written
// (no such directory, disk full) is trouble with the user's input, exit 2 with one line, not an
// internal error.
#include <stdexcept>
#include <string>
#include <string_view>

#include "io/output_transaction.h"
#include "support/error.h"

namespace spopt::app {

inline void writeOutput(const std::string& path, std::string_view text) {
  try {
    OutputTransaction outputs;
    outputs.file(path, text);
    outputs.commit();
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    // AtomicFile's messages start with the path; keep them as they are.
    std::string message = e.what();
    if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
    throw InputError(path, "", message);
  }
}

}  // namespace spopt::app
