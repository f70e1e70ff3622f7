#pragma once
// Owns text that the IR refers to by std::string_view: names and raw JSON values created after
// load (by passes, by the generator) or unescaped during load. Views stay valid for the arena's life.
#include <deque>
#include <string>
#include <string_view>

namespace spopt {

class Arena {
 public:
  std::string_view store(std::string_view text) {
    if (text.empty()) return std::string_view("", 0);
    return chunks_.emplace_back(text);
  }
  std::string_view store(std::string&& text) {
    if (text.empty()) return std::string_view("", 0);
    return chunks_.emplace_back(std::move(text));
  }

 private:
  std::deque<std::string> chunks_;
};

}  // namespace spopt
