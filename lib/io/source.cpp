#include "io/source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

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

// Bytes read from a stream into one malloc'd block that grows geometrically (realloc of a large
// block remaps pages rather than copying them), followed by zeroed padding.
class StreamedSource : public Source {
 public:
  ~StreamedSource() override { std::free(data_); }
  std::string_view text() const override { return {data_, size_}; }

  // Reads `fd` to its end, exactly once (a FIFO or pipe cannot be read again). Throws InputError
  // naming `path` when it holds more than `limit` bytes or cannot be read.
  static std::shared_ptr<StreamedSource> read(int fd, const std::string& path, uint64_t limit) {
    auto src = std::shared_ptr<StreamedSource>(new StreamedSource());
    size_t capacity = 0;
    for (;;) {
      if (src->size_ == capacity) {
        // Room for one byte past the limit, so that reaching it is told from exceeding it.
        uint64_t most = limit == UINT64_MAX ? limit : limit + 1;
        if (src->size_ >= most) break;
        size_t grown = std::min<uint64_t>(std::max<size_t>(capacity * 2, 1 << 16), most);
        char* data = static_cast<char*>(std::realloc(src->data_, grown + simdjson::SIMDJSON_PADDING));
        if (!data) throw std::bad_alloc();
        src->data_ = data;
        capacity = grown;
      }
      ssize_t n = ::read(fd, src->data_ + src->size_, capacity - src->size_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(path, "", std::string("cannot read file: ") + std::strerror(errno));
      if (n == 0) break;
      src->size_ += size_t(n);
    }
    if (src->size_ > limit) throw InputError(path, "", "input exceeds --max-input-bytes=" + std::to_string(limit));
    if (!src->data_) src->data_ = static_cast<char*>(std::malloc(simdjson::SIMDJSON_PADDING));
    if (!src->data_) throw std::bad_alloc();
    std::memset(src->data_ + src->size_, 0, simdjson::SIMDJSON_PADDING);
    return src;
  }

 private:
  StreamedSource() = default;
  char* data_ = nullptr;
  size_t size_ = 0;
};

std::atomic<uint64_t> g_max_input_bytes{0};  // 0: not set, the default applies

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

// The memory this process may use: the machine's, or less where a control group (a container)
// caps it (cgroup v2, then v1; "max" or an absurd v1 value means no cap).
static uint64_t usableMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
  for (const char* file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    int fd = ::open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[32] = {};
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0 || buf[0] < '0' || buf[0] > '9') continue;
    uint64_t cap = std::strtoull(buf, nullptr, 10);
    if (cap > 0 && (memory == 0 || cap < memory)) memory = cap;
  }
  return memory;
}

uint64_t defaultMaxInputBytes() {
  static const uint64_t limit = [] {
    uint64_t memory = usableMemory();
    return memory ? memory / 2 : uint64_t(4) << 30;
  }();
  return limit;
}

uint64_t maxInputBytes() {
  uint64_t set = g_max_input_bytes.load(std::memory_order_relaxed);
  return set ? set : defaultMaxInputBytes();
}

void setMaxInputBytes(uint64_t limit) { g_max_input_bytes.store(limit, std::memory_order_relaxed); }

std::shared_ptr<Source> openSource(const std::string& path) {
  // Opened once and read through that one descriptor: a FIFO or /dev/stdin opened a second time
  // would wait for a writer that has already gone.
  bool is_stdin = path == "-";
  int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  auto cannotRead = [&](int err) { return InputError(path, "", std::string("cannot read file: ") + std::strerror(err)); };
  if (fd < 0) throw cannotRead(errno);
  struct Closer {
    int fd;
    bool own;
    ~Closer() {
      if (own) ::close(fd);
    }
  } closer{fd, !is_stdin};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw cannotRead(errno);
  if (S_ISDIR(st.st_mode)) throw cannotRead(EISDIR);
  // Standard input redirected from a file may have been read partly already (`{ read; sp-opt
  // validate -; } < f`): then it is read from where it stands, as a stream.
  bool at_start = !is_stdin || !S_ISREG(st.st_mode) || ::lseek(fd, 0, SEEK_CUR) == 0;
  if (at_start)
    if (auto mapped = MappedSource::map(fd, st)) return mapped;
  return StreamedSource::read(fd, path, maxInputBytes());
}

std::string readInputFile(const std::string& path) { return std::string(openSource(path)->text()); }

}  // namespace spopt
