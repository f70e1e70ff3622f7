#pragma once
// Var names across PIR files. PIR values have numbers, not names; Paddle itself names only a
// parameter (builtin.parameter's parameter_name) and a program input (pd_op.data's name), and an
// in-place op (pd_op.sgd_) writes its first operand's buffer. Import keeps those names, so a
// legacy program sent through a PIR file comes back with its parameters, inputs and optimizer
// updates as they were; every other value is "vN". Export writes each value with the
// number it was read with (kept in preserved keys), so a PIR file reads back to the same text.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "io/pir/pir_common.h"
#include "ir/ir.h"

namespace spopt::pir {

// Preserved keys: a named var's value number; an op's in-place results' numbers, by slot.
inline constexpr const char* kVarValueKey = "pir_value";
inline constexpr const char* kResultValuesKey = "result_values";  // under the op's kOpKey
// The op attribute that carries its results' dist_attr (process mesh, dims_mapping), one JSON
// string per result ("" for none): PIR files as sp-opt writes them keep what replay needs to
// slice a global input (Paddle ignores an attribute its op does not declare).
inline constexpr const char* kVarDistAttr = "spopt_result_dist_attrs";

// The op attribute that carries the op's own dist_attr (process mesh, chunk, priorities: what
// Paddle's PIR attributes do not hold; streams are attributes already) as one JSON string
// {"dist_attr": {...}, "stream_attrs_added": bool}: the second says the writer copied the streams
// into the attributes, so that import takes them out again.
inline constexpr const char* kOpDistAttr = "spopt_dist_attr";

// The op attribute that names its results' vars, one string per result ("" where the file itself
// says: a "vN" temporary, a parameter's or data op's own name), so that a job keeps its var names
// through a PIR file; a name an earlier result holds is that var written again (in place).
inline constexpr const char* kResultNamesAttr = "spopt_result_names";

// Adds to an op's `attrs` (and their types) what sp-opt keeps in PIR attributes: kResultNamesAttr
// when a result's name would be lost, kOpDistAttr when `op` has a dist_attr with more than
// streams or with streams its attributes lack, kVarDistAttr when a result var has one. Call before the writer copies the streams into
// `attrs`. `vars`: the block's vars by name.
void addSpoptAttrs(const ojson& op, const std::unordered_map<std::string, const ojson*>& vars, ojson& attrs, ojson& types);

// The kVarDistAttr value for `op`'s results, nullopt when none has a dist_attr. `var` finds a var
// of the block by name (null when absent).
template <typename VarOf>
std::optional<ojson> resultDistAttrs(const ojson& op, VarOf var) {
  ojson out = ojson::array();
  bool any = false;
  const ojson outputs = op.value("outputs", ojson::object());
  for (const auto& [slot, args] : outputs.items())
    for (const auto& a : args) {
      const ojson* v = a.is_string() ? var(a.template get<std::string>()) : nullptr;
      bool has = v && v->contains("dist_attr") && v->at("dist_attr").is_object() && !v->at("dist_attr").empty();
      out.push_back(has ? v->at("dist_attr").dump() : "");
      any = any || has;
    }
  if (!any) return std::nullopt;
  return out;
}

// Renames, in a program import just read (format v1 JSON): parameter and data results by their
// names, and an in-place op's first result as its first operand's var when that operand is
// persistable, its old value is not read later and both have the same type.
// Also moves each op's kVarDistAttr into its result vars; a malformed one is an InputError naming
// `file` and `ops_pointer`/N/attrs/... (ops_pointer: where the file holds its ops).
void nameValues(ojson& program, const std::string& file, const std::string& ops_pointer);

// Drops the keys PIR files keep on vars (kVarTypeKey, kVarValueKey): for a job translated to
// legacy ops, whose files have no PIR types or value numbers.
void dropPirVarKeys(Job& job);

// The value numbers an export gives one block's vars: "vN" is N; a var import named keeps its
// kVarValueKey; any other var takes the next free number from `first` on, in declaration order. A
// var written again (an in-place op) becomes a new value: the number the op's result was read with
// while that is free, else the next one.
class ValueNumbering {
 public:
  ValueNumbering(const ojson& block, int64_t first);
  // The number of the value the var holds now; nullopt for a var not declared in the block.
  std::optional<int64_t> idOf(const std::string& name) const;
  // `name` written as result `slot` of `op`.
  void define(const std::string& name, const ojson& op, const std::string& slot);
  // The number of result `slot` of `op` when it holds no value (an optional result the op did not
  // make; Paddle prints it with <<NULL TYPE>>): the one it was read with, else a fresh one.
  int64_t nullResult(const ojson& op, const std::string& slot);
  static std::optional<int64_t> numberInName(std::string_view name);  // "v12" -> 12

 private:
  std::unordered_map<std::string, int64_t> ids_;      // first value of each var
  std::unordered_map<std::string, int64_t> rebound_;  // vars written again: their latest value
  std::unordered_set<std::string> defined_;
  std::unordered_set<int64_t> used_;
  int64_t next_ = 0;
};

}  // namespace spopt::pir
