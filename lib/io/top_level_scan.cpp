#include "io/top_level_scan.h"

#include <cstring>

namespace spopt {
namespace {

class TopLevelScanner {
 public:
  TopLevelScanner(std::string_view text, ReleaseBehind* release) : t_(text), release_(release) {}

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
  size_t value(size_t i) const {
    if (i >= t_.size()) return kBad;
    if (t_[i] == '"') return str(i);
    if (t_[i] == '{' || t_[i] == '[') {
      int depth = 0;
      while (i < t_.size()) {
        char c = t_[i];
        if (c == '"') {
          i = str(i);
          if (i == kBad) return kBad;
          continue;
        }
        if (c == '{' || c == '[') ++depth;
        else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
        ++i;
      }
      return kBad;
    }
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

std::optional<TopLevel> scanTopLevel(std::string_view text, ReleaseBehind* release) {
  return TopLevelScanner(text, release).scan();
}

}  // namespace spopt
