#pragma once
// Appends JSON text to a buffer and hands it to an AtomicFile in large chunks, so that a job of
// millions of ops is written at disk speed with a few megabytes of memory.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spopt {
class AtomicFile;
}

namespace spopt::gen {

class JsonEmitter {
 public:
  explicit JsonEmitter(AtomicFile* file);  // nullptr: keep everything in memory (take())

  void raw(std::string_view s) { buf_.append(s); }
  void raw(char c) { buf_.push_back(c); }
  void integer(int64_t v);
  // Shortest text that reads back as the same double, always with a '.' or an exponent so that
  // it stays a floating-point number (format.md preserves int vs float).
  void number(double v);
  void boolean(bool v) { raw(v ? std::string_view("true") : std::string_view("false")); }
  void string(std::string_view s);  // quoted, escaped where needed
  void intArray(const std::vector<int64_t>& v);

  // Writes the buffer out once it holds a chunk; call between entities.
  void maybeFlush() {
    if (file_ && buf_.size() >= kChunk) flush();
  }
  void flush();
  std::string take() { return std::move(buf_); }

 private:
  static constexpr size_t kChunk = size_t(4) << 20;
  AtomicFile* file_;
  std::string buf_;
};

}  // namespace spopt::gen
