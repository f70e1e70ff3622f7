#include "io/pir/pir_common.h"

#include <array>
#include <utility>

namespace spopt::pir {

std::string valueVarName(std::string_view id) { return "v" + std::string(id); }
std::string slotName(const char* prefix, size_t i) { return prefix + std::to_string(i); }

namespace {
// (format v1 dtype, PIR JSON type id, PIR text spelling)
struct DTypeSpelling {
  const char* dtype;
  const char* json_id;
  const char* text;
};
constexpr std::array<DTypeSpelling, 8> kDTypes{{
    {"float32", "0.t_f32", "f32"},
    {"float64", "0.t_f64", "f64"},
    {"float16", "0.t_f16", "f16"},
    {"bfloat16", "0.t_bf16", "bf16"},
    {"int32", "0.t_i32", "i32"},
    {"int64", "0.t_i64", "i64"},
    {"bool", "0.t_bool", "b"},
    {"uint8", "0.t_ui8", "u8"},
}};

constexpr std::array<std::pair<const char*, const char*>, 10> kAttrIds{{
    {"0.a_bool", "bool"},
    {"0.a_i32", "int32"},
    {"0.a_i64", "int64"},
    {"0.a_f32", "float32"},
    {"0.a_f64", "float64"},
    {"0.a_str", "str"},
    {"1.a_dtype", "dtype"},
    {"1.a_place", "place"},
    {"1.a_intarray", "intarray"},
    {"1.a_layout", "layout"},
}};

constexpr std::array<std::pair<const char*, const char*>, 8> kTextKinds{{
    {"Int32", "int32"},       {"Int64", "int64"},        {"Float", "float32"},
    {"Double", "float64"},    {"pd_op.DataType", "dtype"}, {"pd_op.Place", "place"},
    {"pd_op.IntArray", "intarray"}, {"pd_op.DataLayout", "layout"}}};

// The `to` column of the kDTypes row whose `from` column is `key`.
std::optional<std::string> dtypeColumn(std::string_view key, const char* DTypeSpelling::*from,
                                       const char* DTypeSpelling::*to) {
  for (const auto& d : kDTypes)
    if (key == d.*from) return d.*to;
  return std::nullopt;
}

// A table of name pairs read left to right (or right to left); a name without a pair comes back
// unchanged.
template <size_t N>
std::string renamed(const std::array<std::pair<const char*, const char*>, N>& pairs, std::string_view name, bool leftward) {
  for (const auto& [left, right] : pairs)
    if (name == (leftward ? right : left)) return leftward ? left : right;
  return std::string(name);
}
}  // namespace

std::string attrTypeOfTextKind(std::string_view kind) { return renamed(kTextKinds, kind, false); }
std::string textKindOfAttrType(std::string_view type) { return renamed(kTextKinds, type, true); }
std::string attrTypeOfJsonId(std::string_view id) { return renamed(kAttrIds, id, false); }
std::string jsonIdOfAttrType(std::string_view type) { return renamed(kAttrIds, type, true); }

std::optional<std::string> textTypeOfDtype(std::string_view dtype) { return dtypeColumn(dtype, &DTypeSpelling::dtype, &DTypeSpelling::text); }
std::optional<std::string> dtypeOfJsonType(std::string_view id) { return dtypeColumn(id, &DTypeSpelling::json_id, &DTypeSpelling::dtype); }
std::optional<std::string> jsonTypeOfDtype(std::string_view dtype) { return dtypeColumn(dtype, &DTypeSpelling::dtype, &DTypeSpelling::json_id); }
std::optional<std::string> dtypeOfTextType(std::string_view spelling) { return dtypeColumn(spelling, &DTypeSpelling::text, &DTypeSpelling::dtype); }

ojson arrayTypeDescriptor(const ojson& element_types) {
  if (element_types.empty()) return "array";
  const ojson& first = element_types.front();
  bool uniform = first.is_string();
  for (const auto& t : element_types) uniform = uniform && t == first;
  if (uniform) return "array<" + first.get<std::string>() + ">";
  return element_types;
}

std::optional<ojson> arrayElementType(const ojson& descriptor, size_t i) {
  if (descriptor.is_array()) {
    if (i >= descriptor.size()) return std::nullopt;
    return descriptor[i];
  }
  if (!descriptor.is_string()) return std::nullopt;
  const std::string& s = descriptor.get_ref<const std::string&>();
  if (s.size() > 7 && s.rfind("array<", 0) == 0 && s.back() == '>') return ojson(s.substr(6, s.size() - 7));
  return std::nullopt;
}

bool isStreamAttr(std::string_view name) {
  for (const char* s : kStreamAttrs)
    if (name == s) return true;
  return false;
}

}  // namespace spopt::pir
