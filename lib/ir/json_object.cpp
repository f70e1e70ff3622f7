#include "ir/json_object.h"

#include <charconv>
#include <cstdint>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "ir/json_text.h"

namespace spopt {

namespace {
// Walks the members of a compact, already validated object in order, calling visit(Member) until
// it returns false: strings are skipped as units and nesting is counted, so a value ends at the
// first ',' or '}' at depth zero.
template <class Visit>
void forEachMember(std::string_view t, Visit visit) {
  size_t i = 1;  // after '{'
  auto skipString = [&](size_t p) {  // p at the opening quote; returns index after closing quote
    ++p;
    while (p < t.size() && t[p] != '"') p += (t[p] == '\\') ? 2 : 1;
    return p + 1;
  };
  while (i < t.size() && t[i] != '}') {
    size_t key_end = skipString(i);
    std::string_view key = t.substr(i + 1, key_end - i - 2);
    size_t v = key_end + 1;  // after ':'
    size_t p = v;
    int depth = 0;
    while (p < t.size()) {
      char c = t[p];
      if (c == '"') {
        p = skipString(p);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      else if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) break;
      ++p;
    }
    if (!visit(Member{key, t.substr(v, p - v)})) return;
    i = (p < t.size() && t[p] == ',') ? p + 1 : p;
  }
}


// The members of a compact object text, in order.
std::vector<Member> split(std::string_view text) {
  std::vector<Member> out;
  forEachMember(text, [&](Member m) {
    out.push_back(m);
    return true;
  });
  return out;
}
}  // namespace

const SharedObject* JsonObject::share(Arena& arena, std::string_view compact_text) {
  // Collected on the stack: a dist_attr has about seven members, and this runs once per distinct
  // text, not per object.
  Member small[16];
  size_t count = 0;
  std::vector<Member> all;
  forEachMember(compact_text, [&](Member m) {
    if (count < std::size(small)) small[count++] = m;
    else {
      if (all.empty()) all.assign(small, small + count);
      all.push_back(m);
    }
    return true;
  });
  std::span<const Member> members = all.empty() ? std::span<const Member>(small, count) : std::span<const Member>(all);
  return arena.storeOne(SharedObject{compact_text, arena.storeArray(members)});
}

JsonObject JsonObject::fromShared(const SharedObject* shared) {
  JsonObject o;
  o.shared_ = shared;
  return o;
}

JsonObject JsonObject::fromCompactText(std::string_view compact_text) {
  JsonObject o;
  o.own_ = std::make_unique<Own>(Own{compact_text, split(compact_text)});
  return o;
}

std::span<const Member> JsonObject::items() const {
  if (shared_) return shared_->members;
  if (own_) return own_->members;
  return {};
}

const std::string_view* JsonObject::find(std::string_view key) const {
  for (const Member& m : items())
    if (m.key == key) return &m.raw;
  return nullptr;
}

std::vector<Member>& JsonObject::editableMembers() {
  if (!own_) own_ = std::make_unique<Own>();
  if (shared_) own_->members.assign(shared_->members.begin(), shared_->members.end());
  shared_ = nullptr;
  own_->text = {};
  return own_->members;
}

std::optional<int64_t> JsonObject::getInt(std::string_view key) const {
  auto r = raw(key);
  return r ? rawToInt(*r) : std::nullopt;
}
std::optional<double> JsonObject::getNumber(std::string_view key) const {
  auto r = raw(key);
  return r ? rawToNumber(*r) : std::nullopt;
}
std::optional<bool> JsonObject::getBool(std::string_view key) const {
  auto r = raw(key);
  return r ? rawToBool(*r) : std::nullopt;
}
std::optional<std::string> JsonObject::getString(std::string_view key) const {
  auto r = raw(key);
  return r ? rawToString(*r) : std::nullopt;
}
std::optional<std::vector<int64_t>> JsonObject::getIntArray(std::string_view key) const {
  auto r = raw(key);
  return r ? rawToIntArray(*r) : std::nullopt;
}

void JsonObject::setRaw(Arena& arena, std::string_view key, std::string_view raw) {
  std::vector<Member>& ms = editableMembers();
  std::string_view stored = arena.store(raw);
  for (auto& m : ms) {
    if (m.key == key) {
      m.raw = stored;
      return;
    }
  }
  // Keys are held escaped, as written between the quotes; most need no escaping.
  if (isPlainJsonText(key)) return ms.push_back({arena.store(key), stored});
  std::string quoted = quoteJson(key);
  ms.push_back({arena.store(std::string_view(quoted).substr(1, quoted.size() - 2)), stored});
}
void JsonObject::setInt(Arena& arena, std::string_view key, int64_t v) { setRaw(arena, key, intToRaw(v)); }
void JsonObject::setDouble(Arena& arena, std::string_view key, double v) {
  if (!std::isfinite(v)) throw std::invalid_argument("setDouble: " + std::string(key) + " is not a finite number");
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, r.ptr);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  setRaw(arena, key, text);
}
void JsonObject::setIntArray(Arena& arena, std::string_view key, const std::vector<int64_t>& v) { setRaw(arena, key, intArrayToRaw(v)); }
void JsonObject::setBool(Arena& arena, std::string_view key, bool v) { setRaw(arena, key, v ? "true" : "false"); }
void JsonObject::setString(Arena& arena, std::string_view key, std::string_view v) {
  setRaw(arena, key, quoteJson(v));
}

bool JsonObject::erase(std::string_view key) {
  if (!find(key)) return false;
  std::vector<Member>& ms = editableMembers();
  for (auto it = ms.begin(); it != ms.end(); ++it) {
    if (it->key == key) {
      ms.erase(it);
      return true;
    }
  }
  return false;
}

std::string JsonObject::toJson() const {
  if (std::string_view text = compactText(); !text.empty()) return std::string(text);
  std::string out = "{";
  std::span<const Member> ms = items();
  for (size_t i = 0; i < ms.size(); ++i) {
    if (i) out += ',';
    out += '"';
    out += ms[i].key;
    out += "\":";
    out += ms[i].raw;
  }
  out += '}';
  return out;
}

}  // namespace spopt
