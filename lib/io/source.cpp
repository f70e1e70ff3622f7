#include "io/source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <iterator>

#include "support/error.h"

namespace spopt {
namespace {

class PaddedSource : public Source {
 public:
  explicit PaddedSource(simdjson::padded_string bytes) : bytes_(std::move(bytes)) {}
  std::string_view text() const override { return {bytes_.data(), bytes_.size()}; }

 private:
  simdjson::padded_string bytes_;
};

// A regular file mapped read-only, followed by zero pages for the padding. Ranges the loader has
// parsed are dropped from the process with MADV_DONTNEED (touching them again re-reads the page
// cache), so a job's file never needs to be resident in full: peak memory is the IR plus a window.
class MappedSource : public Source {
 public:
  // Null when `fd` (whose fstat is `st`) is no regular file or cannot be mapped (the caller reads it instead).
  static std::shared_ptr<MappedSource> map(int fd, const struct stat& st) {
    if (!S_ISREG(st.st_mode)) return nullptr;
    size_t size = size_t(st.st_size);
    size_t page = size_t(sysconf(_SC_PAGESIZE));
    size_t len = (size + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
    void* base = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return nullptr;
    if (size > 0 && mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
      munmap(base, len);
      return nullptr;
    }
    if (size > 0) madvise(base, size, MADV_SEQUENTIAL);
    return std::shared_ptr<MappedSource>(new MappedSource(static_cast<const char*>(base), size, len, page));
  }
  ~MappedSource() override { munmap(const_cast<char*>(base_), mapped_); }
  std::string_view text() const override { return {base_, size_}; }
  void release(const char* from, const char* to) const override {
    uintptr_t a = (reinterpret_cast<uintptr_t>(from) + page_ - 1) / page_ * page_;
    uintptr_t b = reinterpret_cast<uintptr_t>(to) / page_ * page_;
    if (b > a) madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
  }

 private:
  MappedSource(const char* base, size_t size, size_t mapped, size_t page)
      : base_(base), size_(size), mapped_(mapped), page_(page) {}
  const char* base_;
  size_t size_, mapped_, page_;
};

}  // namespace

void Source::release(const char*, const char*) const {}

std::shared_ptr<Source> copySource(std::string_view text) {
  return std::make_shared<PaddedSource>(simdjson::padded_string(text));
}

std::shared_ptr<Source> openSource(const std::string& path) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return copySource(text);
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto cannotRead = [&](int err) { return InputError(path, "", std::string("cannot read file: ") + std::strerror(err)); };
  if (fd < 0) throw cannotRead(errno);
  struct stat st {};
  bool known = ::fstat(fd, &st) == 0;
  if (known && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw cannotRead(EISDIR);
  }
  auto mapped = known ? MappedSource::map(fd, st) : nullptr;
  ::close(fd);
  if (mapped) return mapped;
  auto loaded = simdjson::padded_string::load(path);
  if (loaded.error()) throw InputError(path, "", std::string("cannot read file: ") + simdjson::error_message(loaded.error()));
  return std::make_shared<PaddedSource>(std::move(loaded).value_unsafe());
}

}  // namespace spopt
