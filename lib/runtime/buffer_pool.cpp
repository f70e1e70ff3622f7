#include "runtime/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "runtime/kernels/parallel.h"

namespace spopt::rt {
namespace {

constexpr size_t kPooledFrom = size_t(64) << 10;  // glibc maps (and faults in) from 128 KiB
constexpr size_t kHuge = size_t(2) << 20;
// Idle bytes kept for reuse; past it a freed buffer goes back to the kernel. A replay's working
// set cycles through a few sizes, so a bounded idle list catches nearly every request.
constexpr size_t kIdleCap = size_t(1) << 30;

// Size classes: 4 per power of two (at most 25% over the request), in whole 64 KiB units so a
// class is a multiple of the page size.
size_t sizeClass(size_t n) {
  size_t p = 1;
  while (p * 2 <= n) p *= 2;
  size_t step = p / 4;
  size_t c = (n + step - 1) / step * step;
  constexpr size_t unit = size_t(64) << 10;
  return (c + unit - 1) / unit * unit;
}

struct Pool {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> idle;  // by size class
  // Faulted-in memory fresh chunks are cut from first: (next byte, bytes left) per reservation.
  std::vector<std::pair<std::byte*, size_t>> reserve;
  BufferPoolStats stats;  // stats.reserved: the bytes left over all of `reserve`
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be freed during static destruction
  return *p;
}

// A mapping of `n` bytes (a multiple of the page size) whose start is 2 MiB aligned when n is at
// least 2 MiB, so that the kernel can back it with huge pages.
void* mapFresh(size_t n) {
  size_t extra = n >= kHuge ? kHuge : 0;
  void* raw = mmap(nullptr, n + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(raw);
  uintptr_t start = extra ? (base + kHuge - 1) / kHuge * kHuge : base;
  if (size_t head = start - base) munmap(raw, head);
  if (size_t tail = extra - (start - base)) munmap(reinterpret_cast<void*>(start + n), tail);
#ifdef MADV_HUGEPAGE
  if (extra) madvise(reinterpret_cast<void*>(start), n, MADV_HUGEPAGE);  // advice only: failure is fine
#endif
  return reinterpret_cast<void*>(start);
}

void release(void* p, size_t cls) {
  Pool& pl = pool();
  {
    std::lock_guard lk(pl.mu);
    if (pl.stats.idle + cls <= kIdleCap) {
      pl.idle[cls].push_back(p);
      pl.stats.idle += cls;
      return;
    }
    pl.stats.mapped -= cls;
  }
  munmap(p, cls);
}

}  // namespace

// Under AddressSanitizer every buffer comes from malloc, so that a kernel writing past its output
// hits a redzone instead of the next pooled buffer.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

std::shared_ptr<std::byte> allocateBuffer(size_t bytes, bool zero) {
  if (bytes == 0) bytes = 1;
  if (bytes > SIZE_MAX / 2) throw std::bad_alloc();
  if (bytes < kPooledFrom || kAddressSanitizer) {
    size_t padded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, padded);
    if (!p) throw std::bad_alloc();
    if (zero) std::memset(p, 0, padded);
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
  }
  size_t cls = sizeClass(bytes);
  void* p = nullptr;
  bool fresh = false;
  {
    // The smallest idle buffer of the class or up to 2x above it: exact classes alone left
    // the pool holding twice the replay's peak.
    Pool& pl = pool();
    std::lock_guard lk(pl.mu);
    for (auto it = pl.idle.lower_bound(cls); it != pl.idle.end() && it->first <= 2 * cls; ++it) {
      if (it->second.empty()) continue;
      p = it->second.back();
      it->second.pop_back();
      cls = it->first;
      pl.stats.idle -= cls;
      ++pl.stats.reused;
      break;
    }
  }
  if (!p) {
    // A class under 2 MiB is cut from a huge-page chunk: its first piece serves the request, the
    // others go to the idle list (the next requests of the class take them). The chunk comes
    // from the reservation while it lasts (already zero: nothing used it).
    size_t chunk = cls < kHuge ? kHuge : cls;
    Pool& pl = pool();
    {
      std::lock_guard lk(pl.mu);
      for (auto& [next, left] : pl.reserve)
        if (left >= chunk) {
          p = next;
          next += chunk;
          left -= chunk;
          pl.stats.reserved -= chunk;
          break;
        }
    }
    if (!p) {
      p = mapFresh(chunk);
      if (!p) throw std::bad_alloc();
      std::lock_guard lk(pl.mu);
      pl.stats.mapped += chunk;  // a tail shorter than a piece stays mapped: unmapping it would end the huge page
    }
    fresh = true;
    size_t pieces = chunk / cls;
    auto* base = static_cast<std::byte*>(p);
    std::lock_guard lk(pl.mu);
    ++pl.stats.fresh;
    for (size_t i = 1; i < pieces; ++i) {
      pl.idle[cls].push_back(base + i * cls);
      pl.stats.idle += cls;
    }
  }
  if (zero && !fresh) std::memset(p, 0, (bytes + 63) / 64 * 64);  // a fresh mapping is zero already
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [cls](std::byte* q) { release(q, cls); });
}

void reserveBuffers(size_t bytes, int threads) {
  if (kAddressSanitizer || bytes == 0) return;
  const size_t n = (bytes + kHuge - 1) / kHuge * kHuge;
  auto* p = static_cast<std::byte*>(mapFresh(n));
  if (!p) return;  // advice, not a need: the run maps as it goes
  // Fault every page in (a huge page on its first touch, 4 KiB ones where the kernel gave none),
  // a share of the huge pages per thread.
  constexpr size_t kPage = 4096;
  const size_t huge_pages = n / kHuge, shares = std::min(huge_pages, size_t(std::clamp(threads, 1, 64)));
  auto touch = [&](size_t share) {
    for (size_t h = share; h < huge_pages; h += shares)
      for (size_t b = 0; b < kHuge; b += kPage) reinterpret_cast<volatile char*>(p)[h * kHuge + b] = 0;
  };
  parallelFor(int64_t(shares), int(shares), [&](int64_t share) { touch(size_t(share)); });
  Pool& pl = pool();
  std::lock_guard lk(pl.mu);
  pl.stats.mapped += n;
  pl.stats.reserved += n;
  pl.reserve.emplace_back(p, n);
}

bool bufferPoolActive() { return !kAddressSanitizer; }

BufferPoolStats bufferPoolStats() {
  std::lock_guard lk(pool().mu);
  return pool().stats;
}

}  // namespace spopt::rt
