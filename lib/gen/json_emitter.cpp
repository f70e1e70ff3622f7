#include "gen/json_emitter.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include "io/atomic_file.h"
#include "ir/json_text.h"

namespace spopt::gen {

JsonEmitter::JsonEmitter(AtomicFile* file) : file_(file) { buf_.reserve(kChunk + 64 * 1024); }

void JsonEmitter::integer(int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf_.append(tmp, r.ptr);
}

void JsonEmitter::number(double v) {
  if (!std::isfinite(v)) throw std::logic_error("JSON has no text for a non-finite number");
  char tmp[40];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  std::string_view text(tmp, size_t(r.ptr - tmp));
  buf_.append(text);
  if (text.find_first_of(".eE") == std::string_view::npos) buf_.append(".0");
}

void JsonEmitter::string(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == '"' || c == '\\') {
      buf_ += quoteJson(s);
      return;
    }
  }
  buf_.push_back('"');
  buf_.append(s);
  buf_.push_back('"');
}

void JsonEmitter::intArray(const std::vector<int64_t>& v) {
  buf_.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) buf_.push_back(',');
    integer(v[i]);
  }
  buf_.push_back(']');
}

void JsonEmitter::flush() {
  if (!file_ || buf_.empty()) return;
  file_->write(buf_);
  buf_.clear();
}

}  // namespace spopt::gen
