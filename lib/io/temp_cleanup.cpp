#include "io/temp_cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace spopt {
namespace {

// Fixed slots, so that the handler reads plain memory: no allocation, no lock. A slot is claimed
// (kFilling) before its path is written and published (kReady) after, so the handler never reads
// a half-written path.
enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };
struct CleanupSlot {
  std::atomic<int> state{kFree};
  bool directory = false;
  char path[PATH_MAX];
};
constexpr int kSlots = 128;
CleanupSlot g_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads slot states");

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGXFSZ};

struct Dirent64 {  // the kernel's struct linux_dirent64
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

bool isDotOrDotDot(const char* n) { return n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0)); }

// Removes `name` in `dirfd` (a folder with its content down to `depth` levels).
bool removeAt(int dirfd, const char* name, int depth) {
  if (::unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return true;
  if ((errno != EISDIR && errno != EPERM) || depth <= 0) return false;
  int fd = ::openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;
  bool ok = true;
  alignas(8) char buf[4096];
  // Entries removed while listing may shift the listing: list again from the start until a pass
  // finds nothing left (bounded, in case something cannot be removed).
  for (int pass = 0; pass < 64; ++pass) {
    ::lseek(fd, 0, SEEK_SET);
    bool found = false;
    for (;;) {
      long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        auto* d = reinterpret_cast<Dirent64*>(buf + off);
        off += d->d_reclen;
        if (isDotOrDotDot(d->d_name)) continue;
        found = true;
        if (!removeAt(fd, d->d_name, depth - 1)) ok = false;
      }
    }
    if (!found || !ok) break;
  }
  ::close(fd);
  return ::unlinkat(dirfd, name, AT_REMOVEDIR) == 0 && ok;
}

extern "C" void removeTempsAndReraise(int sig) {
  int saved = errno;
  for (CleanupSlot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != kReady) continue;
    if (s.directory) removeTreeSignalSafe(s.path);
    else ::unlink(s.path);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  errno = saved;
  // Blocked while this handler runs: delivered, with the default action, as it returns.
  ::raise(sig);
}

}  // namespace

bool removeTreeSignalSafe(const char* path) { return removeAt(AT_FDCWD, path, 16); }

void installTempCleanupHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
      struct sigaction act {};
      act.sa_handler = removeTempsAndReraise;
      sigemptyset(&act.sa_mask);
      for (int other : kSignals) sigaddset(&act.sa_mask, other);  // one cleanup at a time
      ::sigaction(sig, &act, nullptr);
    }
  });
}

TempRegistration::TempRegistration(const std::string& path, bool is_directory) {
  std::error_code ec;
  // Absolute, so that the handler finds it whatever the working directory is by then.
  std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec || absolute.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acq_rel)) continue;
    std::memcpy(g_slots[i].path, absolute.c_str(), absolute.size() + 1);
    g_slots[i].directory = is_directory;
    g_slots[i].state.store(kReady, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TempRegistration& TempRegistration::operator=(TempRegistration&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

void TempRegistration::release() {
  if (slot_ >= 0) g_slots[slot_].state.store(kFree, std::memory_order_release);
  slot_ = -1;
}

size_t registeredTempCount() {
  size_t n = 0;
  for (const CleanupSlot& s : g_slots) n += s.state.load(std::memory_order_acquire) == kReady;
  return n;
}

}  // namespace spopt
