#pragma once
// An ordered JSON object whose values are kept as raw JSON text (attributes, dist attributes).
//
// Loaded objects keep only their compact text (interned: identical objects share one) and split it into members
// on first access; an object nobody reads or edits is written back as that same text. This keeps
// the IR of a million-op job small and its load and write fast.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/arena.h"

namespace spopt {

struct Member {
  std::string_view key;  // the key as written between the quotes (escapes kept)
  std::string_view raw;  // the value's compact JSON text
};

class JsonObject {
 public:
  JsonObject() = default;
  JsonObject(const JsonObject& o)
      : text_(o.text_), members_(o.members_ ? std::make_unique<std::vector<Member>>(*o.members_) : nullptr) {}
  JsonObject(JsonObject&&) noexcept = default;
  JsonObject& operator=(const JsonObject& o) { return *this = JsonObject(o); }
  JsonObject& operator=(JsonObject&&) noexcept = default;
  // `compact_text` must be a valid, minified JSON object that outlives this JsonObject.
  static JsonObject fromCompactText(std::string_view compact_text);

  const std::vector<Member>& items() const;
  // The members without splitting this object (no member list allocated for it): for one scan
  // over several keys. Valid only until the next read of another object on this thread.
  const std::vector<Member>& peekMembers() const;
  bool empty() const { return text_.size() <= 2 && items().empty(); }
  const std::string_view* find(std::string_view key) const;  // splits the object: the pointer stays valid
  // The value's raw text, without splitting an object nobody split yet: reads of loaded objects
  // allocate nothing and touch only their (interned, shared) text, not a member list per op.
  std::optional<std::string_view> raw(std::string_view key) const;
  bool has(std::string_view key) const { return raw(key).has_value(); }
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
  // Shortest text that reads back as the same double, always with a '.' or exponent (1.0, not 1),
  // so it stays a float; NaN and infinities are not JSON: std::invalid_argument.
  void setDouble(Arena& arena, std::string_view key, double v);
  void setIntArray(Arena& arena, std::string_view key, const std::vector<int64_t>& v);
  bool erase(std::string_view key);

  std::string toJson() const;  // the object as compact JSON text
  // The loaded text while the object is unedited, else empty (then write items()).
  std::string_view compactText() const { return text_; }

 private:
  std::vector<Member>& members() const;  // split on first use
  std::string_view text_;
  // Null until someone reads members: 24 bytes per object, most of which are never split.
  mutable std::unique_ptr<std::vector<Member>> members_;
};

}  // namespace spopt
