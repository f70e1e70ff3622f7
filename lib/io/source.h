#pragma once
// The bytes of a job being loaded, with simdjson's padding readable after them: a regular file is
// mapped, anything else (stdin, a pipe, text in memory) is read into a padded buffer.
#include <simdjson.h>

#include <cstdint>
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

// "-" is standard input. A regular file is mapped; anything else (a pipe, FIFO, /dev/stdin,
// `<(cmd)`, a character device) is read once, to its end, into memory, and refused with
// "PATH: input exceeds --max-input-bytes=N" past maxInputBytes(). Throws InputError when the
// file cannot be read.
std::shared_ptr<Source> openSource(const std::string& path);
// The whole of `path`, read as openSource does (for readers that want a string: Paddle, PIR).
std::string readInputFile(const std::string& path);

// The most bytes read from a stream (a regular file is mapped, not held, and has no limit). The
// default is half the memory the process may use (the machine's, or its container's cap): a
// streamed input is held whole and the IR built from it takes about as much again, so a larger
// stream could not be loaded anyway, and a clear error beats the OOM killer (4 GiB where the
// memory size is unknown).
uint64_t maxInputBytes();
void setMaxInputBytes(uint64_t limit);  // the --max-input-bytes option
uint64_t defaultMaxInputBytes();
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
