#pragma once
// Temp files and folders that must not outlive the process. An output is staged under a temp name
// until it is complete; if SIGTERM, SIGINT, SIGHUP, SIGPIPE or SIGXFSZ ends the process first, a
// handler removes every registered path (unlink, or a folder with everything in it) using only
// async-signal-safe calls, then re-raises the signal with its default action, so the exit status
// still says which signal it was. SIGKILL cannot be caught: file outputs avoid named temps where
// the filesystem allows (O_TMPFILE, see atomic_file.h), so that nothing is left to clean.
#include <string>

namespace spopt {

// Installs the handlers for the signals above whose disposition is the default (an ignored signal,
// as under nohup, stays ignored). Idempotent; main() calls it once.
void installTempCleanupHandlers();

// A registered path for as long as the object lives (move-only). Registration can fail when every
// slot is taken (hundreds of outputs open at once); the path is then simply not cleaned on a signal.
class TempRegistration {
 public:
  TempRegistration() = default;
  TempRegistration(const std::string& path, bool is_directory);
  ~TempRegistration() { release(); }
  TempRegistration(TempRegistration&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  TempRegistration& operator=(TempRegistration&& other) noexcept;
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;
  // Forgets the path (it was renamed into place or removed by its owner).
  void release();

 private:
  int slot_ = -1;
};

// The paths registered now (for tests).
size_t registeredTempCount();

// Removes `path` and, if it is a folder, everything under it (best effort, async-signal-safe: no
// allocation, fixed depth). Returns false if something could not be removed.
bool removeTreeSignalSafe(const char* path);

}  // namespace spopt
