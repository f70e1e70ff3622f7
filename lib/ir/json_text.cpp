#include "ir/json_text.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace spopt {

static std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<int64_t> rawToInt(std::string_view raw) {
  raw = trim(raw);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc() || p != raw.data() + raw.size()) return std::nullopt;
  return v;
}

std::optional<double> rawToNumber(std::string_view raw) {
  raw = trim(raw);
  double v = 0;
  auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc() || p != raw.data() + raw.size()) return std::nullopt;
  return v;
}

std::optional<bool> rawToBool(std::string_view raw) {
  raw = trim(raw);
  if (raw == "true") return true;
  if (raw == "false") return false;
  return std::nullopt;
}

bool rawIsString(std::string_view raw) {
  raw = trim(raw);
  return raw.size() >= 2 && raw.front() == '"' && raw.back() == '"';
}

std::optional<std::string> rawToString(std::string_view raw) {
  raw = trim(raw);
  if (!rawIsString(raw)) return std::nullopt;
  std::string_view body = raw.substr(1, raw.size() - 2);
  if (body.find('\\') == std::string_view::npos) return std::string(body);
  auto j = nlohmann::json::parse(raw, nullptr, false);
  if (!j.is_string()) return std::nullopt;
  return j.get<std::string>();
}

namespace {
// A JSON array whose every element `fits`, read as T; nullopt otherwise.
template <typename T, typename Fits> std::optional<std::vector<T>> rawToArray(std::string_view raw, Fits fits) {
  auto j = nlohmann::json::parse(raw, nullptr, false);
  if (!j.is_array()) return std::nullopt;
  std::vector<T> out;
  out.reserve(j.size());
  for (const auto& e : j) {
    if (!fits(e)) return std::nullopt;
    out.push_back(e.template get<T>());
  }
  return out;
}
}  // namespace

namespace {
bool jsonSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The spelling nearly every int-array attribute has, read without building a JSON tree: '[' then
// integers (no leading zeros, as JSON writes them) separated by ',' then ']', JSON whitespace
// anywhere between. nullopt for anything else, which the full parser then reads (or refuses).
std::optional<std::vector<int64_t>> plainIntArray(std::string_view raw) {
  const char *p = raw.data(), *end = p + raw.size();
  auto skip = [&] {
    while (p < end && jsonSpace(*p)) ++p;
  };
  skip();
  if (p == end || *p++ != '[') return std::nullopt;
  std::vector<int64_t> out;
  skip();
  if (p < end && *p == ']') {
    ++p;
  } else {
    for (;;) {
      const char* digits = p < end && *p == '-' ? p + 1 : p;
      if (digits + 1 < end && *digits == '0' && digits[1] >= '0' && digits[1] <= '9') return std::nullopt;
      int64_t v = 0;
      auto [q, ec] = std::from_chars(p, end, v);
      if (ec != std::errc() || q == p || (q < end && (*q == '.' || *q == 'e' || *q == 'E'))) return std::nullopt;
      out.push_back(v);
      p = q;
      skip();
      if (p == end) return std::nullopt;
      if (*p == ']') {
        ++p;
        break;
      }
      if (*p++ != ',') return std::nullopt;
      skip();
    }
  }
  skip();
  if (p != end) return std::nullopt;
  return out;
}
}  // namespace

std::optional<std::vector<int64_t>> rawToIntArray(std::string_view raw) {
  if (auto v = plainIntArray(raw)) return v;
  return rawToArray<int64_t>(raw, [](const nlohmann::json& e) { return e.is_number_integer(); });
}

std::optional<std::vector<double>> rawToNumberArray(std::string_view raw) {
  return rawToArray<double>(raw, [](const nlohmann::json& e) { return e.is_number(); });
}

std::optional<std::vector<std::string>> rawToStringArray(std::string_view raw) {
  auto j = nlohmann::json::parse(raw, nullptr, false);
  if (!j.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& e : j) {
    if (!e.is_string()) return std::nullopt;
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<std::string> rawMember(std::string_view raw_object, std::string_view key) {
  auto j = nlohmann::ordered_json::parse(raw_object, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(std::string(key));
  if (it == j.end()) return std::nullopt;
  return it->dump();
}

bool isPlainJsonText(std::string_view text) {
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') return false;
  }
  return true;
}

std::string quoteJson(std::string_view text) {
  if (!isPlainJsonText(text)) return nlohmann::json(std::string(text)).dump();
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  out += text;
  out += '"';
  return out;
}

std::string intToRaw(int64_t v) { return std::to_string(v); }

std::string intArrayToRaw(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  out += ']';
  return out;
}

std::string stringArrayToRaw(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += quoteJson(v[i]);
  }
  out += ']';
  return out;
}

namespace {
std::optional<int64_t> integral(std::string_view raw) {
  if (auto v = rawToInt(raw)) return v;
  if (auto d = rawToNumber(raw); d && std::floor(*d) == *d && std::fabs(*d) < 9e15) return int64_t(*d);
  return std::nullopt;
}
}  // namespace

std::optional<int64_t> rawToIntLenient(std::string_view raw) {
  if (auto v = integral(raw)) return v;
  if (auto b = rawToBool(raw)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<bool> rawToBoolLenient(std::string_view raw) {
  if (auto b = rawToBool(raw)) return b;
  if (auto v = rawToInt(raw); v && (*v == 0 || *v == 1)) return *v == 1;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> rawToIntsLenient(std::string_view raw) {
  if (auto v = rawToIntArray(raw)) return v;
  if (auto v = integral(raw)) return std::vector<int64_t>{*v};
  return std::nullopt;
}

namespace {

bool sameJsonValue(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number_float() || b.is_number_float())
    return a.is_number_float() && b.is_number_float() && a.get<double>() == b.get<double>();
  if (a.is_number() && b.is_number()) return a == b;  // signed and unsigned integers alike
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!sameJsonValue(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !sameJsonValue(*it, *other)) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace

bool rawSameValue(std::string_view a, std::string_view b) {
  if (a == b) return true;
  auto pa = nlohmann::json::parse(a, nullptr, false), pb = nlohmann::json::parse(b, nullptr, false);
  if (pa.is_discarded() || pb.is_discarded()) return false;
  return sameJsonValue(pa, pb);
}

}  // namespace spopt
