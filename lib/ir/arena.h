#pragma once
// Owns text that the IR refers to by std::string_view: names and raw JSON values copied out of a
// loaded file, or created by passes and the generator, and the member lists of interned JSON
// objects (ir/json_object.h). Views stay valid for the arena's life.
//
// A bump allocator: text is packed into 256 KiB blocks, so a million names cost a million
// memcpys and a few hundred allocations, not a heap object each.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace spopt {

class Arena {
 public:
  std::string_view store(std::string_view text) {
    if (text.empty()) return std::string_view("", 0);
    char* p = take(text.size(), 1);
    std::memcpy(p, text.data(), text.size());
    return {p, text.size()};
  }
  // A copy of `items` (of a type the arena may drop without destroying) for the arena's life.
  template <class T>
  std::span<const T> storeArray(std::span<const T> items) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
    if (items.empty()) return {};
    T* p = reinterpret_cast<T*>(take(items.size_bytes(), alignof(T)));
    std::memcpy(static_cast<void*>(p), items.data(), items.size_bytes());
    return {p, items.size()};
  }
  template <class T>
  const T* storeOne(const T& item) {
    return storeArray(std::span<const T>(&item, 1)).data();
  }
  size_t bytes() const { return bytes_; }  // allocated, for statistics

 private:
  static constexpr size_t kBlock = 256 << 10;
  // n bytes at a multiple of `align` (blocks come from operator new, aligned for any scalar).
  char* take(size_t n, size_t align) {
    if (n > kBlock / 4) return allocate(n);  // a big item gets a block of its own; bumping goes on
    size_t pad = (align - reinterpret_cast<uintptr_t>(next_) % align) % align;
    if (n + pad > left_) {
      next_ = allocate(kBlock);
      left_ = kBlock;
      pad = 0;
    }
    char* p = next_ + pad;
    next_ += n + pad;
    left_ -= n + pad;
    return p;
  }
  char* allocate(size_t n) {
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(n));
    bytes_ += n;
    return blocks_.back().get();
  }
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  size_t left_ = 0;
  size_t bytes_ = 0;
};

}  // namespace spopt
