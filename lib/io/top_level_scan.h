#pragma once
// Where the programs of a job lie in its text, found without parsing: a job's bulk is its
// programs, one per rank, and parsing each element of "programs" as a document of its own lets
// ranks load on several threads and keeps simdjson's structural index to one program's size.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/source.h"

namespace spopt {

struct Span {
  size_t begin = 0, end = 0;
};
struct TopLevel {
  Span programs;               // the "programs" array, brackets included
  std::vector<Span> elements;  // each program object
};

// Called with each program as soon as it is found, so that parsing can start before the scan ends.
using OnElement = std::function<void(const Span&)>;

// Any surprise (malformed text, no "programs" array) returns nullopt, and the caller parses the
// whole document instead, which reports the problem precisely. `release`, when given, is advanced
// past each program scanned.
std::optional<TopLevel> scanTopLevel(std::string_view text, ReleaseBehind* release = nullptr,
                                     const OnElement& on_element = {});

// Where a document that ends early stops: the JSON pointer of the innermost value still open at
// the end and what is open there ('{', '[' or '"' for a string). Walks the text once; for error
// messages only (a truncated file names the place it was cut).
struct OpenAtEnd {
  std::string pointer;
  char open = 0;  // 0: nothing is open
};
OpenAtEnd openAtEnd(std::string_view text);

}  // namespace spopt
