#pragma once
// An ordered JSON object whose values are kept as raw JSON text (attributes, dist attributes).
//
// Loaded objects are interned: the loader splits each distinct compact text into its members once,
// into the job's arena (a SharedObject), and every object of that content points at it. A read is a
// pointer hop and a scan of a handful of keys; an object nobody edits allocates nothing of its own
// and is written back as its loaded text. An edit copies the members into a list of the object's own.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/arena.h"

namespace spopt {

struct Member {
  std::string_view key;  // the key as written between the quotes (escapes kept)
  std::string_view raw;  // the value's compact JSON text
};

// A distinct compact object text and its members (views into it), in the arena that interned it.
struct SharedObject {
  std::string_view text;
  std::span<const Member> members;
};

class JsonObject {
 public:
  JsonObject() = default;
  JsonObject(const JsonObject& o) : shared_(o.shared_), own_(o.own_ ? std::make_unique<Own>(*o.own_) : nullptr) {}
  JsonObject(JsonObject&&) noexcept = default;
  JsonObject& operator=(const JsonObject& o) { return *this = JsonObject(o); }
  JsonObject& operator=(JsonObject&&) noexcept = default;
  // Splits `compact_text` (a valid, minified JSON object) into `arena`: the loaders call this once
  // per distinct text and give every object of that content the result (fromShared).
  static const SharedObject* share(Arena& arena, std::string_view compact_text);
  static JsonObject fromShared(const SharedObject* shared);
  // An object of text nobody interned, split into a member list of its own; `compact_text` must
  // be a valid, minified JSON object that outlives this JsonObject.
  static JsonObject fromCompactText(std::string_view compact_text);

  std::span<const Member> items() const;
  // The same as items(): reading members never splits or allocates.
  std::span<const Member> peekMembers() const { return items(); }
  bool empty() const { return items().empty(); }
  // The value's raw text; the pointer stays valid until this object is next edited.
  const std::string_view* find(std::string_view key) const;
  std::optional<std::string_view> raw(std::string_view key) const {
    const std::string_view* r = find(key);
    return r ? std::optional<std::string_view>(*r) : std::nullopt;
  }
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
  // Shortest text that reads back as the same double, always with a '.' or exponent (1.0, not 1),
  // so it stays a float; NaN and infinities are not JSON: std::invalid_argument.
  void setDouble(Arena& arena, std::string_view key, double v);
  void setIntArray(Arena& arena, std::string_view key, const std::vector<int64_t>& v);
  bool erase(std::string_view key);

  std::string toJson() const;  // the object as compact JSON text
  // The loaded text while the object is unedited, else empty (then write items()).
  std::string_view compactText() const { return shared_ ? shared_->text : own_ ? own_->text : std::string_view(); }

 private:
  struct Own {
    std::string_view text;  // the text the members were split from, until the first edit
    std::vector<Member> members;
  };
  std::vector<Member>& editableMembers();  // copies a shared object's members into its own list
  // One of the two, or neither (no members): 16 bytes for each of a big job's millions of objects.
  const SharedObject* shared_ = nullptr;
  std::unique_ptr<Own> own_;
};

}  // namespace spopt
