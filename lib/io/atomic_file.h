#pragma once
// Output files appear whole or not at all. The data goes to a temp file in the destination's
// folder, which replaces the destination on commit(); destroyed uncommitted, it vanishes.
//
// - The temp is unnamed where the filesystem allows (open(dir, O_TMPFILE)): a process killed even
//   by SIGKILL leaves nothing. At commit it gets a name (linkat) and is renamed over the
//   destination, or linked straight to it when there is none. Elsewhere it is a named
//   DEST.tmp.XXXXXX that a SIGTERM/SIGINT handler removes (temp_cleanup.h).
// - An existing destination keeps its permission bits (a 0600 file stays 0600); a new one gets
//   0666 & ~umask. A destination that is a symlink is written through: the link's target is
//   replaced and the link stays.
// - "-" is standard output, written as it comes; so is an existing destination that is no
//   regular file (/dev/null, a FIFO, a terminal), which a rename would replace.
// - Errors are InputError (exit 2): "DEST: write failed: No space left on device"; on standard
//   output "sp-opt: error writing standard output: ...".
//
// commit() is finish() (every byte written, the file closed: whatever can fail for lack of space
// fails here) then publish() (the rename); OutputTransaction finishes every output of a command
// before it publishes any.
#include <memory>
#include <string>
#include <string_view>

#include "io/temp_cleanup.h"

namespace spopt {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates the temp now: an unwritable folder fails here
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void finish();
  void publish();
  void commit() {
    finish();
    publish();
  }
  const std::string& path() const { return path_; }
  // Where the bytes go: the destination with symlinks resolved.
  const std::string& target() const { return target_; }
  // True when the temp is an unnamed (O_TMPFILE) file.
  bool unnamed() const { return kind_ == Kind::Unnamed; }

 private:
  enum class Kind { Stdout, InPlace, Unnamed, Named };
  void flushBuffer();
  void writeFd(const char* data, size_t size);
  void copyToNamed(const std::string& name);

  std::string path_, target_, temp_;
  Kind kind_ = Kind::Named;
  int fd_ = -1;
  bool existed_ = false;  // the destination existed: keep its mode and owner
  unsigned mode_ = 0;
  unsigned uid_ = 0, gid_ = 0;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  bool finished_ = false, published_ = false;
  TempRegistration registration_;
};

// Whole-string convenience: writes `content` to `path` atomically.
void writeFileAtomic(const std::string& path, std::string_view content);

// Standard output, checked: writes all of `data` to stdout (C stdio, where std::cout writes too)
// and throws "sp-opt: error writing standard output: REASON" (InputError) if it cannot.
void writeStdout(std::string_view data);
// Flushes std::cout and stdout; throws as writeStdout when anything written so far was lost.
void flushStdout();
// True once writing standard output has failed (and been reported by the exception).
bool stdoutFailed();
// Makes std::cout keep the reason of a failed write for flushStdout's message (main() calls it
// first thing; output still goes through C's stdout, in order with printf).
void captureStdoutErrors();

}  // namespace spopt
