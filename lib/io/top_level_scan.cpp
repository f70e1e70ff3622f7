#include "io/top_level_scan.h"

#include <cstdint>
#include <cstring>

#include "support/error.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace spopt {
namespace {

class TopLevelScanner {
 public:
  TopLevelScanner(std::string_view text, ReleaseBehind* release, const OnElement& on_element)
      : t_(text), release_(release), on_element_(on_element) {}

  std::optional<TopLevel> scan() {
    TopLevel out;
    bool found = false;
    size_t i = ws(0);
    if (i >= t_.size() || t_[i] != '{') return std::nullopt;
    i = ws(i + 1);
    bool first = true;
    while (i < t_.size() && !(first && t_[i] == '}')) {
      first = false;
      if (t_[i] != '"') return std::nullopt;
      size_t key_end = str(i);
      if (key_end == kBad) return std::nullopt;
      std::string_view key = t_.substr(i + 1, key_end - i - 2);
      i = ws(key_end);
      if (i >= t_.size() || t_[i] != ':') return std::nullopt;
      i = ws(i + 1);
      if (key == "programs") {
        if (found || i >= t_.size() || t_[i] != '[') return std::nullopt;
        found = true;
        size_t end = elements(i, out.elements);
        if (end == kBad) return std::nullopt;
        out.programs = {i, end};
        i = ws(end);
      } else {
        size_t end = value(i);
        if (end == kBad) return std::nullopt;
        i = ws(end);
      }
      if (i < t_.size() && t_[i] == ',') {
        i = ws(i + 1);
        if (i < t_.size() && t_[i] == '}') return std::nullopt;  // trailing comma
      } else if (i < t_.size() && t_[i] == '}') {
        break;
      } else {
        return std::nullopt;
      }
    }
    if (!found || i >= t_.size()) return std::nullopt;
    if (ws(i + 1) != t_.size()) return std::nullopt;  // trailing content: the full parse reports it
    return out;
  }

 private:
  static constexpr size_t kBad = std::string_view::npos;
  std::string_view t_;
  ReleaseBehind* release_;
  const OnElement& on_element_;

  size_t ws(size_t i) const {
    while (i < t_.size() && (t_[i] == ' ' || t_[i] == '\n' || t_[i] == '\t' || t_[i] == '\r')) ++i;
    return i;
  }
  size_t str(size_t i) const {  // at '"': index after the closing quote
    const char* base = t_.data();
    for (++i; i < t_.size();) {
      const void* q = std::memchr(base + i, '"', t_.size() - i);  // SIMD: strings are most bytes
      if (!q) return kBad;
      size_t j = size_t(static_cast<const char*>(q) - base);
      size_t slashes = 0;
      while (j - slashes > i && base[j - slashes - 1] == '\\') ++slashes;
      if (slashes % 2 == 0) return j + 1;
      i = j + 1;
    }
    return kBad;
  }
  // At '{' or '[': the index after its matching close. Walks 64 bytes at a time, stopping only
  // at quotes, backslashes and brackets (a few per line of a job), so the scan of a gigabyte is a
  // memory-bandwidth pass rather than a branch per byte.
  size_t compound(size_t i) const {
    const char* s = t_.data();
    size_t n = t_.size();
    int depth = 0;
    bool in_string = false, skip_first = false;
    for (size_t block = i; block < n; block += 64) {
      uint64_t mask = marks(s + block, n - block);
      if (skip_first) mask &= ~uint64_t(1);
      skip_first = false;
      while (mask) {
        unsigned bit = unsigned(__builtin_ctzll(mask));
        mask &= mask - 1;
        size_t j = block + bit;
        char c = s[j];
        if (in_string) {
          if (c == '"') {
            in_string = false;
          } else if (c == '\\') {  // the escaped character is no mark
            if (bit == 63)
              skip_first = true;
            else
              mask &= ~(uint64_t(1) << (bit + 1));
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) return j + 1;
        }
      }
    }
    return kBad;
  }
  // Bit k set when p[k] is '"', '\\', '{', '}', '[' or ']' (k < 64, k < len).
  static uint64_t marks(const char* p, size_t len) {
    char tail[64];
    if (len < 64) {
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, p, len);
      p = tail;
    }
    uint64_t m = 0;
#ifdef __SSE2__
    for (int k = 0; k < 4; ++k) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
      __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));  // '[' -> '{', ']' -> '}'
      __m128i hit = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(folded, _mm_set1_epi8('{')), _mm_cmpeq_epi8(folded, _mm_set1_epi8('}'))),
          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
      m |= uint64_t(uint32_t(_mm_movemask_epi8(hit))) << (16 * k);
    }
#else
    for (int k = 0; k < 64; ++k) {
      char c = p[k];
      if (c == '"' || c == '\\' || c == '{' || c == '}' || c == '[' || c == ']') m |= uint64_t(1) << k;
    }
#endif
    return m;
  }
  size_t value(size_t i) const {
    if (i >= t_.size()) return kBad;
    if (t_[i] == '"') return str(i);
    if (t_[i] == '{' || t_[i] == '[') return compound(i);
    size_t b = i;
    while (i < t_.size() && t_[i] != ',' && t_[i] != '}' && t_[i] != ']' && t_[i] != ' ' && t_[i] != '\n' &&
           t_[i] != '\t' && t_[i] != '\r')
      ++i;
    return i > b ? i : kBad;
  }
  size_t elements(size_t i, std::vector<Span>& out) const {  // at '[': index after ']'
    i = ws(i + 1);
    if (i < t_.size() && t_[i] == ']') return i + 1;
    while (i < t_.size()) {
      size_t end = value(i);
      if (end == kBad) return kBad;
      out.push_back({i, end});
      if (on_element_) on_element_(out.back());
      if (release_) release_->advance(t_.data() + end);
      i = ws(end);
      if (i < t_.size() && t_[i] == ']') return i + 1;
      if (i >= t_.size() || t_[i] != ',') return kBad;
      i = ws(i + 1);
    }
    return kBad;
  }
};

}  // namespace

OpenAtEnd openAtEnd(std::string_view t) {
  struct Frame {
    bool object;
    std::string key;     // object: the last key read
    int64_t index = 0;   // array: the element being read
    bool at_key = true;  // object: the next string is a key
  };
  std::vector<Frame> stack;
  std::string pending_key;
  OpenAtEnd out;
  size_t i = 0;
  for (; i < t.size(); ++i) {
    char c = t[i];
    if (c == '"') {
      size_t start = ++i;
      while (i < t.size() && t[i] != '"') i += t[i] == '\\' ? 2 : 1;
      if (i >= t.size()) {
        out.open = '"';
        break;
      }
      if (!stack.empty() && stack.back().object && stack.back().at_key) {
        stack.back().key.assign(t.substr(start, i - start));
        stack.back().at_key = false;
      }
    } else if (c == '{' || c == '[') {
      stack.push_back({c == '{', {}});
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().object) stack.back().at_key = true;
      else ++stack.back().index;
    }
  }
  if (!out.open && !stack.empty()) out.open = stack.back().object ? '{' : '[';
  // Each open container is inside a member of its parent; the innermost names a member only
  // when that member's string value is what was cut (a cut key or scalar: the container is the place).
  for (size_t k = 0; k < stack.size(); ++k) {
    const Frame& f = stack[k];
    bool last = k + 1 == stack.size();
    if (last && !(out.open == '"' && !(f.object && f.at_key))) break;
    out.pointer += '/';
    out.pointer += f.object ? pointerToken(f.key) : std::to_string(f.index);
  }
  return out;
}

std::optional<TopLevel> scanTopLevel(std::string_view text, ReleaseBehind* release, const OnElement& on_element) {
  return TopLevelScanner(text, release, on_element).scan();
}

}  // namespace spopt
