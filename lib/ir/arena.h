#pragma once
// Owns text that the IR refers to by std::string_view: names and raw JSON values copied out of a
// loaded file, or created by passes and the generator. Views stay valid for the arena's life.
//
// A bump allocator: text is packed into 256 KiB blocks, so a million names cost a million
// memcpys and a few hundred allocations, not a heap object each.
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spopt {

class Arena {
 public:
  std::string_view store(std::string_view text) {
    if (text.empty()) return std::string_view("", 0);
    char* p;
    if (text.size() > kBlock / 4) {  // a big text gets a block of its own; bumping goes on
      p = allocate(text.size());
    } else {
      if (text.size() > left_) {
        next_ = allocate(kBlock);
        left_ = kBlock;
      }
      p = next_;
      next_ += text.size();
      left_ -= text.size();
    }
    std::memcpy(p, text.data(), text.size());
    return {p, text.size()};
  }
  size_t bytes() const { return bytes_; }  // allocated, for statistics

 private:
  static constexpr size_t kBlock = 256 << 10;
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
