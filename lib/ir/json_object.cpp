#include "ir/json_object.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <iterator>
#include <stdexcept>

#include "ir/json_text.h"

namespace spopt {

JsonObject JsonObject::fromCompactText(std::string_view compact_text) {
  JsonObject o;
  o.text_ = compact_text;
  return o;
}

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
}  // namespace

std::vector<Member>& JsonObject::members() const {
  if (members_) return *members_;
  // Collected on the stack first, then moved into a vector of the exact size: a dist_attr has
  // about seven members, and growing the vector one by one cost four allocations per op.
  Member small[16];
  size_t count = 0;
  std::vector<Member> more;  // past 16 members
  forEachMember(text_, [&](Member m) {
    if (count < std::size(small)) small[count++] = m;
    else more.push_back(m);
    return true;
  });
  auto list = std::make_unique<std::vector<Member>>();
  list->reserve(count + more.size());
  list->insert(list->end(), small, small + count);
  list->insert(list->end(), more.begin(), more.end());
  members_ = std::move(list);
  return *members_;
}

namespace {
// The members of recently read unsplit texts, per thread. A job's loaded objects share one interned
// text per distinct content (most ops of a job have the same dist_attr), so reading a key op after
// op finds its text split here already. An entry answers only for the same address holding the
// same bytes, so an address freed and reused for other text misses.
struct SplitText {
  const char* data = nullptr;
  std::string bytes;
  std::vector<Member> members;  // views into the text at `data`
};
const std::vector<Member>& splitOf(std::string_view text) {
  thread_local std::array<SplitText, 32> cache;
  SplitText& e = cache[(reinterpret_cast<uintptr_t>(text.data()) >> 4) % cache.size()];
  if (e.data != text.data() || e.bytes != text) {
    e.data = text.data();
    e.bytes.assign(text);
    e.members.clear();
    forEachMember(text, [&](Member m) {
      e.members.push_back(m);
      return true;
    });
  }
  return e.members;
}
}  // namespace

std::optional<std::string_view> JsonObject::raw(std::string_view key) const {
  if (!members_ && text_.empty()) return std::nullopt;
  for (const auto& m : members_ ? *members_ : splitOf(text_))
    if (m.key == key) return m.raw;
  return std::nullopt;
}

const std::vector<Member>& JsonObject::peekMembers() const {
  static const std::vector<Member> kNone;
  if (!members_ && text_.empty()) return kNone;
  return members_ ? *members_ : splitOf(text_);
}

const std::vector<Member>& JsonObject::items() const {
  static const std::vector<Member> kNone;
  if (!members_ && text_.empty()) return kNone;
  return members();
}

const std::string_view* JsonObject::find(std::string_view key) const {
  // Most reads ask for a key the object lacks (an optional attribute): answering that from the
  // shared split keeps this object unsplit, with no member list allocated for it.
  if (!members_ && !raw(key)) return nullptr;
  for (const auto& m : items())
    if (m.key == key) return &m.raw;
  return nullptr;
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
  std::vector<Member>& ms = members();
  text_ = {};
  std::string_view stored = arena.store(raw);
  for (auto& m : ms) {
    if (m.key == key) {
      m.raw = stored;
      return;
    }
  }
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
  std::vector<Member>& ms = members();
  for (auto it = ms.begin(); it != ms.end(); ++it) {
    if (it->key == key) {
      ms.erase(it);
      text_ = {};
      return true;
    }
  }
  return false;
}

std::string JsonObject::toJson() const {
  if (!text_.empty()) return std::string(text_);
  std::string out = "{";
  const std::vector<Member>& ms = items();
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
