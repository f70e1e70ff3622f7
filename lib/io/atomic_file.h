#pragma once
// Output files appear whole or not at all: data goes to a temp file beside the destination,
// which is renamed over it on commit() and removed if the writer is destroyed uncommitted.
// The path "-" writes standard output directly; so is an existing destination that is no regular
// file (/dev/null, a FIFO), which a rename would replace.
#include <cstdio>
#include <string>
#include <string_view>

namespace spopt {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void commit();  // throws InputError on I/O failure (temp file removed)
  const std::string& path() const { return path_; }

 private:
  std::string path_, temp_;
  FILE* file_ = nullptr;
  bool is_stdout_ = false;
  bool is_special_ = false;  // written in place: not a regular file
  bool committed_ = false;
};

// Whole-string convenience: writes `content` to `path` atomically.
void writeFileAtomic(const std::string& path, std::string_view content);

}  // namespace spopt
