#include "io/output_transaction.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "support/error.h"

namespace spopt {
namespace fs = std::filesystem;
namespace {

InputError folderError(const std::string& path, int err) {
  return InputError(path, "", std::string("cannot create folder: ") + std::strerror(err));
}

std::string withoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Moves every entry of `from` into `to` (both folders): a folder into an existing folder is merged,
// anything else replaces the entry of the same name.
void mergeInto(const fs::path& from, const fs::path& to, const std::string& display) {
  for (const auto& entry : fs::directory_iterator(from)) {
    fs::path dest = to / entry.path().filename();
    std::error_code ec;
    if (entry.is_directory(ec) && !entry.is_symlink(ec) && fs::is_directory(fs::symlink_status(dest, ec))) {
      mergeInto(entry.path(), dest, display);
      continue;
    }
    if (::rename(entry.path().c_str(), dest.c_str()) != 0)
      throw InputError(display, "", "cannot move output into place: " + dest.string() + ": " + std::strerror(errno));
  }
}

}  // namespace

OutputTransaction::~OutputTransaction() {
  if (committed_) return;
  files_.clear();  // each removes its own temp
  for (auto& f : folders_) {
    removeTreeSignalSafe(f.temp.c_str());
    f.registration.release();
  }
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::rmdir(it->c_str());  // only if empty
}

AtomicFile& OutputTransaction::file(const std::string& path) {
  files_.push_back(std::make_unique<AtomicFile>(path));
  return *files_.back();
}

void OutputTransaction::file(const std::string& path, std::string_view content) { file(path).write(content); }

void OutputTransaction::makeFolders(const std::string& path) {
  fs::path prefix;
  for (const auto& part : fs::path(path)) {
    if (part.empty()) continue;
    prefix /= part;
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) throw folderError(path, ENOTDIR);
      continue;
    }
    if (::mkdir(prefix.c_str(), 0777) == 0) created_.push_back(prefix.string());
    else if (errno != EEXIST) throw folderError(path, errno);
  }
}

std::string OutputTransaction::folder(const std::string& given) {
  std::string path = withoutTrailingSlashes(given);
  StagedFolder staged{path, "", false, {}};
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw folderError(given, ENOTDIR);
    staged.existed = true;
    staged.temp = path + "/.sp-opt.tmp.XXXXXX";
  } else {
    fs::path p(path);
    std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
    try {
      makeFolders(parent);
    } catch (const InputError& e) {
      throw InputError(given, "", e.diagnostic().message);  // the user's name for it
    }
    staged.temp = (fs::path(parent) / ("." + p.filename().string() + ".tmp.XXXXXX")).string();
  }
  if (!::mkdtemp(staged.temp.data())) throw folderError(given, errno);
  staged.registration = TempRegistration(staged.temp, true);
  std::string temp = staged.temp;
  folders_.push_back(std::move(staged));
  return temp;
}

std::string OutputTransaction::displayName(const std::string& staged_path) const {
  for (const auto& f : folders_)
    if (staged_path.compare(0, f.temp.size(), f.temp) == 0) return f.path + staged_path.substr(f.temp.size());
  return staged_path;
}

void OutputTransaction::commit() {
  for (auto& f : files_) f->finish();
  flushStdout();
  for (auto& f : files_) f->publish();
  for (auto& f : folders_) {
    // A new folder is renamed into place whole; one that exists (or appeared meanwhile, as when
    // several mpi processes dump into one folder) receives the entries.
    bool renamed = !f.existed && ::rename(f.temp.c_str(), f.path.c_str()) == 0;
    if (!renamed) {
      if (!f.existed && errno != EEXIST && errno != ENOTEMPTY)
        throw InputError(f.path, "", std::string("cannot move output into place: ") + std::strerror(errno));
      try {
        mergeInto(f.temp, f.path, f.path);
      } catch (const fs::filesystem_error& e) {
        throw InputError(f.path, "", std::string("cannot move output into place: ") + e.code().message());
      }
      removeTreeSignalSafe(f.temp.c_str());
    }
    f.registration.release();
  }
  committed_ = true;
}

}  // namespace spopt
