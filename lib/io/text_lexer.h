#pragma once
// The lexer of the text form (io/text_reader.cpp's only user): a cursor over the bytes with the
// tokens of the grammar (words, integers, punctuation, compact JSON values) and the errors that
// name FILE:LINE:COL. Statements are lines: tokens skip spaces, tabs and `//` comments, never a
// newline, except blankLines() between statements.
#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/text_writer.h"
#include "support/error.h"

namespace spopt::text {

constexpr int kMaxJsonDepth = 1024;

// The offset of the first byte that is not well-formed UTF-8, or npos.
inline size_t invalidUtf8At(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return i;
    auto b1 = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xE0 && b1 < 0xA0) || (c == 0xED && b1 > 0x9F) || (c == 0xF0 && b1 < 0x90) || (c == 0xF4 && b1 > 0x8F)) return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    i += n;
  }
  return std::string_view::npos;
}

inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file) : s_(text), file_(file) {}

  // ---- errors -------------------------------------------------------------------------------
  [[noreturn]] void failAt(size_t offset, const std::string& message) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < offset && i < s_.size(); ++i)
      if (s_[i] == '\n') ++line, line_start = i + 1;
    throw InputError(file_ + ":" + std::to_string(line) + ":" + std::to_string(offset - line_start + 1), "", message + context_);
  }
  [[noreturn]] void fail(const std::string& message) const { failAt(p_, message); }
  size_t lineOf(size_t offset) const {
    size_t line = 1;
    for (size_t i = 0; i < offset; ++i) line += s_[i] == '\n';
    return line;
  }
  // What stands at `at`, for "found ..." in messages.
  std::string describe(size_t at) const {
    if (at >= s_.size()) return "the end of the file";
    if (s_[at] == '\n' || s_[at] == '\r') return "the end of the line";
    size_t end = at;
    while (end < s_.size() && end - at < 24 && isTextWordChar(s_[end])) ++end;
    if (end == at) ++end;
    if (s_[at] == '$')  // the SPMD shorthand's $rank, whole (io/text_spmd.h)
      while (end < s_.size() && end - at < 24 && isTextWordChar(s_[end])) ++end;
    return "\"" + std::string(s_.substr(at, end - at)) + "\"";
  }

  // ---- lexing -------------------------------------------------------------------------------
  // Statements are lines; spaces, tabs and `//` comments separate tokens within one.
  void space() {
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++p_;
      } else if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '/') {
        while (p_ < s_.size() && s_[p_] != '\n') ++p_;
      } else {
        break;
      }
    }
  }
  size_t here() {
    space();
    return p_;
  }
  void blankLines() {
    for (space(); p_ < s_.size() && s_[p_] == '\n'; space()) ++p_;
  }
  char peek() {
    space();
    return p_ < s_.size() ? s_[p_] : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }
  void expect(char c, const std::string& context) {
    if (!eat(c)) fail(std::string("expected \"") + c + "\" " + context + ", found " + describe(p_));
  }
  void endLine(const std::string& what) {
    space();
    if (p_ < s_.size() && s_[p_] != '\n') fail("unexpected " + describe(p_) + " after " + what);
    if (p_ < s_.size()) ++p_;
  }
  std::string_view word() {
    space();
    size_t start = p_;
    while (p_ < s_.size() && isTextWordChar(s_[p_])) ++p_;
    return s_.substr(start, p_ - start);
  }
  bool eatWord(std::string_view w) {
    size_t start = here();
    if (word() == w) return true;
    p_ = start;
    return false;
  }
  void expectWord(std::string_view w, const std::string& context) {
    size_t at = here();
    if (!eatWord(w)) failAt(at, "expected \"" + std::string(w) + "\" " + context + ", found " + describe(at));
  }
  int64_t integer(const std::string& what) {
    size_t at = here();
    size_t end = p_ + (p_ < s_.size() && s_[p_] == '-');
    while (end < s_.size() && isDigit(s_[end])) ++end;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s_.data() + p_, s_.data() + end, v);
    if (ec == std::errc::result_out_of_range) failAt(at, "number out of range");
    if (ec != std::errc() || (end < s_.size() && isTextWordChar(s_[end])))
      failAt(at, "expected an integer " + what + ", found " + describe(at));
    p_ = end;
    return v;
  }
  std::vector<int64_t> intList(const std::string& what) {
    std::vector<int64_t> out;
    expect('[', "to open " + what);
    if (eat(']')) return out;
    do out.push_back(integer("in " + what));
    while (eat(','));
    expect(']', "to close " + what);
    return out;
  }

  // ---- JSON values (attribute values, meshes), kept as compact text ------------------------
  void jsonSpace() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r')) ++p_;
  }
  void jsonString(std::string& out) {
    size_t start = p_++;
    while (true) {
      if (p_ >= s_.size() || s_[p_] == '\n') failAt(start, "unterminated string");
      char c = s_[p_];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c == '\\') {
        char e = p_ + 1 < s_.size() ? s_[p_ + 1] : '\0';
        if (e == 'u') {
          for (size_t k = 2; k < 6; ++k)
            if (p_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[p_ + k]))) fail("bad \\u escape in a string");
          p_ += 6;
          continue;
        }
        if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos || e == '\0') fail("bad escape in a string");
        p_ += 2;
        continue;
      }
      ++p_;
    }
    ++p_;
    out.append(s_.substr(start, p_ - start));
  }
  void jsonNumber(std::string& out) {
    size_t start = p_;
    auto digits = [&] {
      size_t d = p_;
      while (p_ < s_.size() && isDigit(s_[p_])) ++p_;
      if (p_ == d) failAt(start, "malformed number");
    };
    if (s_[p_] == '-') ++p_;
    if (p_ < s_.size() && s_[p_] == '0')
      ++p_;
    else
      digits();
    if (p_ < s_.size() && s_[p_] == '.') ++p_, digits();
    if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
      ++p_;
      if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
      digits();
    }
    out.append(s_.substr(start, p_ - start));
  }
  void json(std::string& out, int depth) {
    jsonSpace();
    if (depth > kMaxJsonDepth) fail("JSON nested too deeply (over 1024 levels)");
    char c = p_ < s_.size() ? s_[p_] : '\0';
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      out += c;
      ++p_;
      jsonSpace();
      if (p_ < s_.size() && s_[p_] == close) {
        out += close, ++p_;
        return;
      }
      std::vector<std::string_view> keys;  // as written: a repeated key is refused, not merged
      while (true) {
        if (c == '{') {
          jsonSpace();
          if (p_ >= s_.size() || s_[p_] != '"') fail("expected a string key in a JSON object, found " + describe(p_));
          size_t key_at = p_;
          jsonString(out);
          std::string_view key = s_.substr(key_at, p_ - key_at);
          for (std::string_view k : keys)
            if (k == key) failAt(key_at, "duplicate key " + std::string(key));
          keys.push_back(key);
          jsonSpace();
          if (p_ >= s_.size() || s_[p_] != ':') fail("expected \":\" in a JSON object, found " + describe(p_));
          out += ':', ++p_;
        }
        json(out, depth + 1);
        jsonSpace();
        char next = p_ < s_.size() ? s_[p_] : '\0';
        if (next == ',') {
          out += ',', ++p_;
        } else if (next == close) {
          out += close, ++p_;
          return;
        } else {
          fail(std::string("expected \",\" or \"") + close + "\" in a JSON " + (c == '{' ? "object" : "array") + ", found " +
               describe(p_));
        }
      }
    }
    if (c == '"') return jsonString(out);
    if (c == '-' || isDigit(c)) return jsonNumber(out);
    for (std::string_view lit : {"true", "false", "null"})
      if (s_.substr(p_, lit.size()) == lit && !(p_ + lit.size() < s_.size() && isTextWordChar(s_[p_ + lit.size()]))) {
        out.append(lit);
        p_ += lit.size();
        return;
      }
    fail("expected a JSON value, found " + describe(p_));
  } protected:
  std::string_view s_;
  size_t p_ = 0;
  const std::string& file_;
  std::string context_;  // appended to every message: which rank of an SPMD section was being read
};

}  // namespace spopt::text
