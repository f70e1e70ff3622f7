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
}  // namespace

std::string attrTypeOfTextKind(std::string_view kind) {
  for (const auto& [text, shared] : kTextKinds)
    if (kind == text) return shared;
  return std::string(kind);
}
std::string textKindOfAttrType(std::string_view type) {
  for (const auto& [text, shared] : kTextKinds)
    if (type == shared) return text;
  return std::string(type);
}
std::optional<std::string> textTypeOfDtype(std::string_view dtype) {
  for (const auto& d : kDTypes)
    if (dtype == d.dtype) return d.text;
  return std::nullopt;
}

std::optional<std::string> dtypeOfJsonType(std::string_view id) {
  for (const auto& d : kDTypes)
    if (id == d.json_id) return d.dtype;
  return std::nullopt;
}
std::optional<std::string> jsonTypeOfDtype(std::string_view dtype) {
  for (const auto& d : kDTypes)
    if (dtype == d.dtype) return d.json_id;
  return std::nullopt;
}
std::optional<std::string> dtypeOfTextType(std::string_view spelling) {
  for (const auto& d : kDTypes)
    if (spelling == d.text) return d.dtype;
  return std::nullopt;
}

std::string attrTypeOfJsonId(std::string_view id) {
  for (const auto& [json_id, name] : kAttrIds)
    if (id == json_id) return name;
  return std::string(id);
}
std::string jsonIdOfAttrType(std::string_view type) {
  for (const auto& [json_id, name] : kAttrIds)
    if (type == name) return json_id;
  return std::string(type);
}

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
