#include "ir/json_object.h"

#include "ir/json_text.h"

namespace spopt {

const std::string_view* JsonObject::find(std::string_view key) const {
  for (const auto& m : members)
    if (m.key == key) return &m.raw;
  return nullptr;
}

std::optional<int64_t> JsonObject::getInt(std::string_view key) const {
  auto* r = find(key);
  return r ? rawToInt(*r) : std::nullopt;
}
std::optional<double> JsonObject::getNumber(std::string_view key) const {
  auto* r = find(key);
  return r ? rawToNumber(*r) : std::nullopt;
}
std::optional<bool> JsonObject::getBool(std::string_view key) const {
  auto* r = find(key);
  return r ? rawToBool(*r) : std::nullopt;
}
std::optional<std::string> JsonObject::getString(std::string_view key) const {
  auto* r = find(key);
  return r ? rawToString(*r) : std::nullopt;
}
std::optional<std::vector<int64_t>> JsonObject::getIntArray(std::string_view key) const {
  auto* r = find(key);
  return r ? rawToIntArray(*r) : std::nullopt;
}

void JsonObject::setRaw(Arena& arena, std::string_view key, std::string_view raw) {
  std::string_view stored = arena.store(raw);
  for (auto& m : members) {
    if (m.key == key) {
      m.raw = stored;
      return;
    }
  }
  members.push_back({arena.store(key), stored});
}
void JsonObject::setInt(Arena& arena, std::string_view key, int64_t v) { setRaw(arena, key, intToRaw(v)); }
void JsonObject::setBool(Arena& arena, std::string_view key, bool v) { setRaw(arena, key, v ? "true" : "false"); }
void JsonObject::setString(Arena& arena, std::string_view key, std::string_view v) {
  setRaw(arena, key, quoteJson(v));
}

bool JsonObject::erase(std::string_view key) {
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (it->key == key) {
      members.erase(it);
      return true;
    }
  }
  return false;
}

std::string JsonObject::toJson() const {
  std::string out = "{";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i) out += ',';
    out += quoteJson(members[i].key);
    out += ':';
    out += members[i].raw;
  }
  out += '}';
  return out;
}

}  // namespace spopt
