#pragma once
// A split's `sections` attribute with its one -1 resolved against the length of the split axis:
// the verifier, the fuse pass's matcher and replay's kernel all decide on the resolved sizes
// ([4, -1] of 8 is [4, 4], equal parts).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spopt {

// nullopt, with `why` set, when sections has more than one -1, a negative size, or sizes that do
// not add up to `len` (len < 0, unknown: only the -1 count and signs are checked, the -1 stays).
inline std::optional<std::vector<int64_t>> resolveSplitSections(std::vector<int64_t> sections, int64_t len, std::string* why = nullptr) {
  auto fail = [&](const char* w) -> std::optional<std::vector<int64_t>> {
    if (why) *why = w;
    return std::nullopt;
  };
  int64_t known = 0;
  int64_t infer = -1;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i] == -1 && infer < 0) infer = int64_t(i);
    else if (sections[i] < 0) return fail("has more than one -1 or a negative size");
    else if (__builtin_add_overflow(known, sections[i], &known)) return fail("adds up past int64");
  }
  if (len < 0) return sections;
  if (infer >= 0) {
    if (known > len) return fail("adds up to more than the split dim");
    sections[size_t(infer)] = len - known;
  } else if (known != len) {
    return fail("does not add up to the split dim");
  }
  return sections;
}

}  // namespace spopt
