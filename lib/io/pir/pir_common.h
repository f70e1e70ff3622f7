#pragma once
// Shared vocabulary of the PIR (Paddle 3) readers and writers (docs/pir.md states the mapping).
//
// A PIR op becomes a format-v1 op of the same name: operands are input slots in0, in1, ... and
// results output slots out0, out1, ... (one var each; a null operand keeps its slot, empty).
// SSA value %N becomes var "vN". Attribute values become plain JSON under "attrs"; each
// attribute's PIR type goes under the op's preserved key "pir" ("attr_types"), in a vocabulary
// shared by both PIR formats: bool int32 int64 float32 float64 str dtype place intarray layout,
// "array<T>" (elements of one type), "array" (empty) or a list of element types; anything else
// keeps its PIR spelling (a JSON type id like "0.a_type", a text kind like "pd_op.Foo").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace spopt::pir {

using ojson = nlohmann::ordered_json;

// Preserved keys this mapping adds to format v1 entities.
inline constexpr const char* kOpKey = "pir";        // op: attr_types, result_attrs, ...
inline constexpr const char* kVarTypeKey = "pir_type";  // var: the value's PIR type, verbatim
// A result that holds no value (an optional result the op did not make) has a value number and no
// type: Paddle's printer writes the type so, its JSON writer as {"#": kNullTypeJsonId}. Format v1
// keeps such a result as an empty output slot.
inline constexpr const char* kNullTypeText = "<<NULL TYPE>>";
inline constexpr const char* kNullTypeJsonId = "NULL";
inline constexpr const char* kProgramKey = "pir";   // program: base_code, region/block ids

std::string valueVarName(std::string_view id);  // "57" -> "v57"
std::string slotName(const char* prefix, size_t i);  // ("in", 0) -> "in0"

// Element types: PIR JSON type ids ("0.t_f32"), PIR text spellings ("f32") and format v1
// dtype names ("float32"). nullopt: a type format v1 cannot hold.
std::optional<std::string> dtypeOfJsonType(std::string_view id);
std::optional<std::string> jsonTypeOfDtype(std::string_view dtype);
std::optional<std::string> dtypeOfTextType(std::string_view spelling);
std::optional<std::string> textTypeOfDtype(std::string_view dtype);

// Attribute kinds as PIR text prints them ("Int32", "pd_op.DataType") <-> the shared vocabulary
// ("int32", "dtype"); a name with no counterpart comes back unchanged.
std::string attrTypeOfTextKind(std::string_view kind);
std::string textKindOfAttrType(std::string_view type);

// Attribute type names: PIR JSON attribute ids <-> the shared vocabulary (unknown ids unchanged).
std::string attrTypeOfJsonId(std::string_view id);
std::string jsonIdOfAttrType(std::string_view type);
// The descriptor of an array from its elements' descriptors (see the header comment).
ojson arrayTypeDescriptor(const ojson& element_types);
// The element descriptor of `descriptor` at index i of an array, or nullopt if not an array type.
std::optional<ojson> arrayElementType(const ojson& descriptor, size_t i);

// Streams of PIR ops, mirrored into the op's dist_attr where sp-opt reads them.
inline constexpr const char* kStreamAttrs[] = {"execution_stream", "event_to_record", "events_to_wait",
                                              "force_record_event"};
bool isStreamAttr(std::string_view name);

}  // namespace spopt::pir
