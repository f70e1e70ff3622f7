#include "io/paddle/paddle_json.h"

#include <google/protobuf/descriptor.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace spopt::paddle {

namespace {
std::optional<Json> nonFinite(double d) {
  if (std::isnan(d)) return Json("nan");
  if (std::isinf(d)) return Json(d > 0 ? "inf" : "-inf");
  return std::nullopt;
}
bool validUtf8(const std::string& s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}
}  // namespace

Json floatToJson(float f) {
  if (auto special = nonFinite(f)) return *special;
  char buf[32];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  return Json(std::strtod(buf, nullptr));
}
Json doubleToJson(double d) {
  if (auto special = nonFinite(d)) return *special;
  return Json(d);
}
double jsonToDouble(const Json& j) {
  if (j.is_number()) return j.get<double>();
  std::string s = j.get<std::string>();
  if (s == "nan") return std::nan("");
  if (s == "inf") return HUGE_VAL;
  if (s == "-inf") return -HUGE_VAL;
  throw std::invalid_argument("'" + s + "' is not a number");
}

Json bytesToJson(const std::string& bytes) {
  if (validUtf8(bytes)) return Json(bytes);
  return Json{{"hex", toHex(bytes)}};
}
std::string jsonToBytes(const Json& j) {
  if (j.is_object()) return fromHex(j.at("hex").get<std::string>());
  return j.get<std::string>();
}

std::string toHex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}
std::string fromHex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw std::invalid_argument("bad hex digit");
  };
  if (hex.size() % 2) throw std::invalid_argument("odd-length hex string");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  return out;
}

std::string enumName(const google::protobuf::EnumDescriptor* d, int value) {
  const auto* v = d->FindValueByNumber(value);
  return v ? v->name() : std::to_string(value);
}
int enumValue(const google::protobuf::EnumDescriptor* d, const std::string& name) {
  if (const auto* v = d->FindValueByName(name)) return v->number();
  char* end = nullptr;
  long n = std::strtol(name.c_str(), &end, 10);
  if (!name.empty() && end && *end == '\0') return static_cast<int>(n);
  throw std::invalid_argument("unknown " + d->name() + " '" + name + "'");
}

std::pair<std::string, bool> dtypeFromPaddle(const std::string& p) {
  if (p == "FP32") return {"float32", true};
  if (p == "FP64") return {"float64", true};
  if (p == "FP16") return {"float16", true};
  if (p == "BF16") return {"bfloat16", true};
  if (p == "INT32") return {"int32", true};
  if (p == "INT64") return {"int64", true};
  if (p == "BOOL") return {"bool", true};
  if (p == "UINT8") return {"uint8", true};
  if (p == "INT8" || p == "INT16") return {"int32", false};
  if (p == "SIZE_T") return {"int64", false};
  if (p == "COMPLEX64" || p == "COMPLEX128") return {"float64", false};
  if (p == "FP8_E4M3FN" || p == "FP8_E5M2") return {"uint8", false};
  return {"float32", false};
}
std::string dtypeToPaddle(const std::string& d) {
  if (d == "float32") return "FP32";
  if (d == "float64") return "FP64";
  if (d == "float16") return "FP16";
  if (d == "bfloat16") return "BF16";
  if (d == "int32") return "INT32";
  if (d == "int64") return "INT64";
  if (d == "bool") return "BOOL";
  if (d == "uint8") return "UINT8";
  throw std::invalid_argument("unknown dtype '" + d + "'");
}

Json shapeFromPaddle(const std::vector<int64_t>& dims, Json& paddle) {
  Json shape = Json::array();
  bool changed = false;
  for (int64_t d : dims) {
    shape.push_back(d < -1 ? -1 : d);
    changed |= d < -1;
  }
  if (changed) paddle["dims"] = dims;
  return shape;
}
std::vector<int64_t> dimsToPaddle(const Json& shape, const Json& paddle) {
  std::vector<int64_t> out;
  for (const auto& d : shape) out.push_back(d.get<int64_t>());
  if (!paddle.is_object() || !paddle.contains("dims")) return out;
  auto kept = paddle["dims"].get<std::vector<int64_t>>();
  if (kept.size() != out.size()) return out;
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] != (kept[i] < -1 ? -1 : kept[i])) return out;
  return kept;
}

namespace {
bool readVarint(std::string_view b, size_t& pos, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= b.size()) return false;
    unsigned char c = static_cast<unsigned char>(b[pos++]);
    out |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}
// Walks one message's fields; descends into `nested` levels of length-delimited fields that parse.
std::optional<std::string> walk(std::string_view b, size_t base, int depth) {
  size_t pos = 0;
  while (pos < b.size()) {
    size_t at = pos;
    uint64_t tag;
    if (!readVarint(b, pos, tag)) return "byte " + std::to_string(base + at) + ": field tag runs past the end (truncated?)";
    uint64_t field = tag >> 3;
    int wire = static_cast<int>(tag & 7);
    std::string what = "byte " + std::to_string(base + at) + ": field " + std::to_string(field);
    if (field == 0) return what + ": invalid field number 0";
    uint64_t v;
    switch (wire) {
      case 0:
        if (!readVarint(b, pos, v)) return what + ": varint runs past the end (truncated?)";
        break;
      case 1:
      case 5: {
        size_t width = wire == 1 ? 8 : 4;
        if (b.size() - pos < width) return what + ": fixed-width value runs past the end (truncated?)";
        pos += width;
        break;
      }
      case 2: {
        if (!readVarint(b, pos, v)) return what + ": length runs past the end (truncated?)";
        if (v > b.size() - pos)
          return what + ": length " + std::to_string(v) + " runs past the end of the data (" +
                 std::to_string(b.size() - pos) + " bytes left; truncated?)";
        // Blocks (1 in the program) hold vars (3) and ops (4): look inside those, where the bytes
        // are messages for sure; other length-delimited fields may be strings.
        bool message = (depth == 0 && field == 1) || (depth == 1 && (field == 3 || field == 4));
        if (message)
          if (auto p = walk(b.substr(pos, v), base + pos, depth + 1)) return p;
        pos += v;
        break;
      }
      default: return what + ": invalid wire type " + std::to_string(wire);
    }
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::string> findWireProblem(std::string_view bytes) { return walk(bytes, 0, 0); }

}  // namespace spopt::paddle
