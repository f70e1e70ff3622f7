#pragma once
// Checks of JSON text the job parser (io/job_parser.cpp) runs beside simdjson: the pointer it is
// at, repeated object keys inside a raw value, and where a document that ends early was cut.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace spopt {

// One step of a JSON pointer: a key, or an array index when index >= 0.
struct PathStep {
  std::string_view key;
  int64_t index = -1;
};
// "/programs/0/blocks" for the first `depth` steps.
std::string pointerOf(const PathStep* steps, size_t depth);

// The first object key repeated within `e` (depth first): true, with its pointer relative to `e`
// in `at` and the key in `key`.
bool findDuplicateKey(simdjson::dom::element e, std::string& at, std::string& key);

// For a document simdjson found cut (INCOMPLETE_ARRAY_OR_OBJECT, UNCLOSED_STRING): the pointer
// reached and a message naming the byte it ends at; nullopt when nothing is open at its end.
struct EndsEarly {
  std::string pointer, message;
};
std::optional<EndsEarly> endsEarly(std::string_view whole);

}  // namespace spopt
