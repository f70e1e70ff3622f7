#include "io/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <streambuf>

#include "support/error.h"

namespace spopt {
namespace {

constexpr size_t kBufferSize = 1 << 20;

// Read once, before any thread runs: umask() can only be read by setting it.
const mode_t kUmask = [] {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}();

// An output that cannot be written is trouble for the user to fix (exit 2), not an internal error.
InputError ioError(const std::string& what, const std::string& path, int err) {
  return InputError(path, "", what + ": " + std::strerror(err));
}

// SPOPT_NAMED_TEMPS=1 makes every temp a named file, as on a filesystem without O_TMPFILE, so
// that tests can exercise that path (and the signal handler that cleans it up) anywhere.
const bool kNamedTempsOnly = [] {
  const char* v = std::getenv("SPOPT_NAMED_TEMPS");
  return v && *v && std::string_view(v) != "0";
}();

std::atomic<bool> g_stdout_failed{false};
std::atomic<int> g_stdout_errno{0};  // why the first failed write to stdout failed

void noteStdoutErrno(int err) {
  int none = 0;
  if (err) g_stdout_errno.compare_exchange_strong(none, err);
}

// std::cout's buffer once captureStdoutErrors() ran: every byte goes straight to C's stdout (so
// that cout and printf output keep their order, as with the default synchronised buffer), and
// the reason of a failed write is kept, since an error seen only at exit has lost its errno.
class CheckedStdoutBuf : public std::streambuf {
 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (std::fputc(c, stdout) == EOF) {
      noteStdoutErrno(errno);
      return traits_type::eof();
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    size_t written = std::fwrite(s, 1, size_t(n), stdout);
    if (written != size_t(n)) noteStdoutErrno(errno);
    return std::streamsize(written);
  }
  int sync() override {
    if (std::fflush(stdout) == 0) return 0;
    noteStdoutErrno(errno);
    return -1;
  }
};

[[noreturn]] void throwStdoutError(int err) {
  g_stdout_failed = true;
  if (!err) err = g_stdout_errno.load();
  throw InputError("sp-opt", "", std::string("error writing standard output") + (err ? std::string(": ") + std::strerror(err) : ""));
}

// The path a write to `path` lands on: symlinks followed (also a dangling one, whose target is
// created), so that the rename replaces the target and keeps the link.
std::string resolveSymlinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::string link(PATH_MAX, '\0');
    ssize_t n = ::readlink(p.c_str(), link.data(), link.size());
    if (n <= 0) return p;
    link.resize(size_t(n));
    size_t slash = p.rfind('/');
    p = link[0] == '/' || slash == std::string::npos ? link : p.substr(0, slash + 1) + link;
  }
  return p;  // a loop: opening it fails with ELOOP, as it would have anyway
}

std::string folderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string randomSuffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(::getpid()) << 32)};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06llx", static_cast<unsigned long long>(rng() & 0xffffff));
  return buf;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    kind_ = Kind::Stdout;
    return;
  }
  struct stat st;
  bool exists = ::stat(path_.c_str(), &st) == 0;
  // A destination that is no regular file (/dev/null, a FIFO, a terminal) is written in place:
  // renaming a temp file over it would replace the device or pipe with a plain file. So is a
  // descriptor's alias (/dev/stdout, /dev/fd/N, /proc/self/fd/N), whatever it is open on.
  bool alias = path_.rfind("/dev/fd/", 0) == 0 || path_.rfind("/dev/std", 0) == 0 || path_.rfind("/proc/", 0) == 0;
  target_ = alias ? path_ : resolveSymlinks(path_);
  if (exists) {
    if (!S_ISREG(st.st_mode) || alias) {
      // An alias appends: it stands for a descriptor the shell opened (`>> log` must not be cut).
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | (alias ? O_APPEND : O_TRUNC));
      if (fd_ < 0) throw ioError("cannot open output", path_, errno);
      kind_ = Kind::InPlace;
      return;
    }
    existed_ = true;
    mode_ = st.st_mode & 07777;
    uid_ = st.st_uid;
    gid_ = st.st_gid;
  }
  std::string folder = folderOf(target_);
  fd_ = kNamedTempsOnly ? -1 : ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);  // 0666 & ~umask
  if (fd_ >= 0) {
    kind_ = Kind::Unnamed;
  } else {
    // No O_TMPFILE here (an older kernel, overlayfs, NFS): a named temp the signal handler removes.
    kind_ = Kind::Named;
    temp_ = target_ + ".tmp.XXXXXX";
    fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
    if (fd_ < 0) {
      temp_.clear();
      throw ioError("cannot create output", path_, errno);
    }
    registration_ = TempRegistration(temp_, false);
    if (!existed_) ::fchmod(fd_, 0666 & ~kUmask);  // mkstemp creates 0600
  }
  if (existed_) {
    // The replacement is the destination's: same owner where we may set it (root), same mode.
    if (uid_ != ::geteuid() || gid_ != ::getegid())
      if (::fchown(fd_, uid_, gid_) != 0) { /* not ours to give away: keep our own */ }
    ::fchmod(fd_, mode_);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::writeFd(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ioError("write failed", path_, errno);
    if (n == 0) throw ioError("write failed", path_, EIO);
    data += n;
    size -= size_t(n);
  }
}

void AtomicFile::flushBuffer() {
  if (used_ == 0) return;
  size_t n = used_;
  used_ = 0;
  writeFd(buf_.get(), n);
}

void AtomicFile::write(std::string_view data) {
  if (data.empty()) return;
  if (finished_) throw std::logic_error("AtomicFile::write after finish");
  if (kind_ == Kind::Stdout) {
    std::cout.flush();  // what the command printed before stays before
    if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size()) throwStdoutError(errno);
    return;
  }
  // Writers hand over large chunks; small ones are gathered into few system calls.
  if (data.size() >= kBufferSize / 2) {
    flushBuffer();
    writeFd(data.data(), data.size());
    return;
  }
  if (!buf_) buf_ = std::make_unique_for_overwrite<char[]>(kBufferSize);
  if (used_ + data.size() > kBufferSize) flushBuffer();
  std::memcpy(buf_.get() + used_, data.data(), data.size());
  used_ += data.size();
}

void AtomicFile::finish() {
  if (finished_) return;
  if (kind_ == Kind::Stdout) {
    flushStdout();
    finished_ = true;
    return;
  }
  flushBuffer();
  if (kind_ != Kind::Unnamed) {  // an unnamed file needs its descriptor until it is linked
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw ioError("write failed", path_, errno);
  }
  finished_ = true;
}

// Gives the unnamed file the name `name`: by its descriptor (AT_EMPTY_PATH needs
// CAP_DAC_READ_SEARCH), else through /proc. Returns false with errno set when neither works.
static bool linkDescriptor(int fd, const std::string& name) {
  if (::linkat(fd, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH) == 0) return true;
  if (errno == EEXIST) return false;
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  return ::linkat(AT_FDCWD, proc, AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

void AtomicFile::copyToNamed(const std::string& name) {
  int out = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) throw ioError("cannot create output", path_, errno);
  temp_ = name;
  registration_ = TempRegistration(temp_, false);
  if (existed_ && (uid_ != ::geteuid() || gid_ != ::getegid()))
    if (::fchown(out, uid_, gid_) != 0) { /* not ours to give away: keep our own */ }
  ::fchmod(out, existed_ ? mode_ : 0666 & ~kUmask);
  auto fail = [&](int err) {
    ::close(out);
    return ioError("write failed", path_, err);
  };
  char chunk[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd_, chunk, sizeof chunk, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(errno);
    if (n == 0) break;
    at += n;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, chunk + done, size_t(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw fail(w < 0 ? errno : EIO);
      done += w;
    }
  }
  if (::close(out) != 0) throw ioError("write failed", path_, errno);
}

void AtomicFile::publish() {
  if (published_) return;
  finish();
  if (kind_ == Kind::Unnamed) {
    // No destination yet: link straight to it (fails with EEXIST if one appeared meanwhile).
    bool linked = !existed_ && linkDescriptor(fd_, target_);
    if (!linked) {
      // Else a name beside the destination for the instant between link and rename, registered
      // before it exists.
      for (int attempt = 0; attempt < 16 && temp_.empty(); ++attempt) {
        std::string name = target_ + ".tmp." + randomSuffix();
        TempRegistration reg(name, false);
        if (linkDescriptor(fd_, name)) {
          temp_ = name;
          registration_ = std::move(reg);
        } else if (errno != EEXIST) {
          // Neither way to link a descriptor works (no /proc, no capability): copy the bytes.
          copyToNamed(name);
        }
      }
      if (temp_.empty()) throw ioError("cannot name output", path_, EEXIST);
    }
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw ioError("write failed", path_, errno);
    if (linked) {
      published_ = true;
      return;
    }
  }
  if (kind_ == Kind::Named || kind_ == Kind::Unnamed) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) throw ioError("cannot rename output into place", path_, errno);
    temp_.clear();
    registration_.release();
  }
  published_ = true;
}

void writeFileAtomic(const std::string& path, std::string_view content) {
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

void writeStdout(std::string_view data) {
  if (g_stdout_failed) throwStdoutError(0);
  std::cout.flush();
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), stdout) != data.size()) throwStdoutError(errno);
  if (std::fflush(stdout) != 0) throwStdoutError(errno);
}

bool stdoutFailed() { return g_stdout_failed; }

void captureStdoutErrors() {
  // Never destroyed: std::cout is flushed after static objects are gone.
  static auto* buf = new CheckedStdoutBuf;
  std::cout.rdbuf(buf);
}

void flushStdout() {
  if (g_stdout_failed) throwStdoutError(0);
  errno = 0;
  std::cout.flush();
  int cout_errno = errno;
  if (std::fflush(stdout) != 0) throwStdoutError(errno);
  if (std::ferror(stdout) || std::cout.bad()) throwStdoutError(cout_errno);
}

}  // namespace spopt
