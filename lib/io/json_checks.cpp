#include "io/json_checks.h"

#include <absl/container/inlined_vector.h>

#include "io/top_level_scan.h"
#include "support/error.h"

namespace spopt {

std::string pointerOf(const PathStep* steps, size_t depth) {
  std::string p;
  for (size_t d = 0; d < depth; ++d) {
    p += '/';
    p += steps[d].index >= 0 ? std::to_string(steps[d].index) : pointerToken(steps[d].key);
  }
  return p;
}

bool findDuplicateKey(simdjson::dom::element e, std::string& at, std::string& key) {
  if (e.type() == simdjson::dom::element_type::OBJECT) {
    simdjson::dom::object o;
    if (e.get_object().get(o)) return false;
    absl::InlinedVector<std::string_view, 16> keys;  // objects in attrs are small: a scan beats a hash
    for (auto [k, v] : o) {
      for (std::string_view seen : keys)
        if (seen == k) {
          at = "/" + pointerToken(k);
          key = std::string(k);
          return true;
        }
      keys.push_back(k);
      if (findDuplicateKey(v, at, key)) {
        at = "/" + pointerToken(k) + at;
        return true;
      }
    }
  } else if (e.type() == simdjson::dom::element_type::ARRAY) {
    simdjson::dom::array a;
    if (e.get_array().get(a)) return false;
    size_t i = 0;
    for (simdjson::dom::element x : a) {
      if (findDuplicateKey(x, at, key)) {
        at = "/" + std::to_string(i) + at;
        return true;
      }
      ++i;
    }
  }
  return false;
}

std::optional<EndsEarly> endsEarly(std::string_view whole) {
  // The structural index knows the document is cut, not where: walk it for the place.
  OpenAtEnd end = openAtEnd(whole);
  if (!end.open) return std::nullopt;
  const char* what = end.open == '"' ? "a string" : end.open == '{' ? "an object" : "an array";
  return EndsEarly{end.pointer, "malformed JSON: the document ends at byte " + std::to_string(whole.size()) + " inside " + what +
                                    " (truncated file?)"};
}

}  // namespace spopt
