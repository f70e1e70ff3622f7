#pragma once
// An ordered JSON object whose values are kept as raw JSON text (attributes, dist attributes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/arena.h"

namespace spopt {

struct Member {
  std::string_view key;
  std::string_view raw;
};

class JsonObject {
 public:
  std::vector<Member> members;

  const std::string_view* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  std::optional<int64_t> getInt(std::string_view key) const;
  std::optional<double> getNumber(std::string_view key) const;
  std::optional<bool> getBool(std::string_view key) const;
  std::optional<std::string> getString(std::string_view key) const;
  std::optional<std::vector<int64_t>> getIntArray(std::string_view key) const;

  // Replaces the value in place (keeping its position) or appends. Text is copied into the arena.
  void setRaw(Arena& arena, std::string_view key, std::string_view raw);
  void setInt(Arena& arena, std::string_view key, int64_t v);
  void setBool(Arena& arena, std::string_view key, bool v);
  void setString(Arena& arena, std::string_view key, std::string_view v);
  bool erase(std::string_view key);
  std::string toJson() const;  // the object as compact JSON text
};

}  // namespace spopt
