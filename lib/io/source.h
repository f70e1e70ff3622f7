#pragma once
// The bytes of a job being loaded, with simdjson's padding readable after them: a regular file is
// mapped, anything else (stdin, a pipe, text in memory) is read into a padded buffer.
#include <simdjson.h>

#include <memory>
#include <string>
#include <string_view>

namespace spopt {

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string_view text() const = 0;
  size_t capacity() const { return text().size() + simdjson::SIMDJSON_PADDING; }
  // Hands back the memory of a parsed range that nothing in the IR views; the bytes stay readable.
  virtual void release(const char* from, const char* to) const;
};

// "-" is standard input. Throws InputError when the file cannot be read.
std::shared_ptr<Source> openSource(const std::string& path);
std::shared_ptr<Source> copySource(std::string_view text);

// Releases a source's bytes behind a forward parse in steps of a few megabytes, so that the calls
// stay few and the resident part of the file stays a window.
class ReleaseBehind {
 public:
  ReleaseBehind(const Source& src, const char* start) : src_(src), done_(start) {}
  void advance(const char* p) {
    if (p > done_ + kStep) {
      src_.release(done_, p);
      done_ = p;
    }
  }
  void finish(const char* end) {
    if (end > done_) src_.release(done_, end);
    done_ = end;
  }

 private:
  static constexpr std::ptrdiff_t kStep = 4 << 20;
  const Source& src_;
  const char* done_;
};

}  // namespace spopt
