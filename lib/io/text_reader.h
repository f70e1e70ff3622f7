#pragma once
// Reads the text form of a job (io/text_writer.h, docs/text-format.md). loadJob() calls it when the
// bytes look like text, so every command that loads a job takes either form.
#include <memory>
#include <string>
#include <string_view>

#include "io/loader.h"

namespace spopt {

// True when, after blank and `//` comment lines, the bytes start with "sp-opt.program text".
// (A JSON job starts with "{".)
bool looksLikeTextJob(std::string_view bytes);

// Parses a text job. Bad input throws InputError whose line reads "FILE:LINE:COL: message" (line
// and column 1-based, the column in bytes). Everything the IR keeps is copied into the job's arena.
std::unique_ptr<Job> readTextJob(std::string_view text, const std::string& name, const LoadOptions& opts = {});

}  // namespace spopt
