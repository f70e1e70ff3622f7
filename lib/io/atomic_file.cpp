#include "io/atomic_file.h"

#include "support/error.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace spopt {

// An output that cannot be written is trouble for the user to fix (exit 2), not an internal error.
static InputError ioError(const std::string& what, const std::string& path) {
  return InputError(path, "", what + ": " + std::strerror(errno));
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    is_stdout_ = true;
    file_ = stdout;
    return;
  }
  // A destination that exists and is no regular file (/dev/null, a FIFO, a terminal) is written
  // in place: renaming a temp file over it would replace the device or pipe with a plain file.
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    file_ = std::fopen(path_.c_str(), "wb");
    if (!file_) throw ioError("cannot open output", path_);
    is_special_ = true;
    return;
  }
  temp_ = path_ + ".tmp.XXXXXX";
  int fd = mkstemp(temp_.data());
  if (fd < 0) throw ioError("cannot create output", path_);
  file_ = fdopen(fd, "wb");
  if (!file_) {
    ::close(fd);
    std::remove(temp_.c_str());
    throw ioError("cannot open output", path_);
  }
  static thread_local char buffer[1 << 20];
  setvbuf(file_, buffer, _IOFBF, sizeof buffer);
}

AtomicFile::~AtomicFile() {
  if (is_stdout_ || committed_) return;
  if (is_special_) {
    if (file_) std::fclose(file_);
    return;
  }
  if (file_) std::fclose(file_);
  std::remove(temp_.c_str());
}

void AtomicFile::write(std::string_view data) {
  if (data.empty()) return;
  if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) throw ioError("write failed", path_);
}

void AtomicFile::commit() {
  if (is_stdout_) {
    std::fflush(stdout);
    committed_ = true;
    return;
  }
  bool ok = std::fflush(file_) == 0;
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  if (!ok) throw ioError("write failed", path_);
  if (is_special_) {
    committed_ = true;
    return;
  }
  // mkstemp creates 0600; give the result the usual permissions.
  mode_t mask = umask(0);
  umask(mask);
  chmod(temp_.c_str(), 0666 & ~mask);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) throw ioError("cannot rename output into place", path_);
  committed_ = true;
}

void writeFileAtomic(const std::string& path, std::string_view content) {
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

}  // namespace spopt
