#pragma once
// Pieces the ops' shape and dtype rules share (ops/*_ops.cpp) and the family registration
// functions the catalogue calls (ops/catalogue.cpp). Rules see ops through OpView, so one rule
// checks an op in every dialect; `where` pointers are canonical (OpView::pointer maps them).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_def.h"
#include "ops/op_view.h"
#include "ops/shape_math.h"

namespace spopt::ops {

using Result = std::optional<OpRuleError>;

bool known(const Var* v);  // present, every dim known
inline bool hasArg(const Slot* s) { return s && !s->args.empty(); }
Result fail(const OpView& op, std::string where, const std::string& message);

// Attribute readers with the kernels' leniency (ir/json_text.h). Absent: the default. Present but
// unreadable: nullopt, and the rule is skipped (the attribute-kind check reports it).
std::optional<int64_t> intAttr(const OpView& op, std::string_view key, int64_t def);
std::optional<bool> boolAttr(const OpView& op, std::string_view key, bool def);
std::optional<ShapeDims> intsAttr(const OpView& op, std::string_view key, ShapeDims def);

Result requireDims(const OpView& op, std::string_view dir, std::string_view slot, const Var* v, const ShapeDims& want,
                   std::string_view why);
// A kernel's requireSameStorage(a, b): `a` (in `dir`) must be stored like `b`.
Result requireSameStorage(const OpView& op, std::string_view dir, std::string_view a_slot, const Var* a,
                          std::string_view b_slot, const Var* b);
// A kernel's requireFloat / dispatchFloat: the input is stored as float32 or float64.
Result requireFloat(const OpView& op, std::string_view slot, const Var* v);
// "Out, when present, is [0, ...X dims]" (Paddle's record of X's shape for the grad op).
Result checkXShape(const OpView& op, const Var* x);

// The rule of a view op whose Out dims follow from X's and an int-list attribute (reshape2's shape,
// squeeze2's and unsqueeze2's axes): Out is resolve(X dims, attr, &why), XShape [0, ...X dims].
template <typename Resolve>
Result ruleDimsFromAttr(const OpView& op, std::string_view attr, Resolve resolve, std::string_view what) {
  const Var* x = op.in("X");
  if (!known(x)) return std::nullopt;
  auto value = intsAttr(op, attr, {});
  if (!value) return std::nullopt;
  std::string why;
  auto out = resolve(x->shape, *value, &why);
  if (!out) return fail(op, "/attrs/" + std::string(attr), why);
  if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), *out, what)) return e;
  return checkXShape(op, x);
}

// Spellings, for the definitions.
inline Spelling legacyName(std::string_view t) { return {t, Dialect::Legacy}; }
inline Spelling currentName(std::string_view t) { return {t, Dialect::Current}; }
inline Spelling pirName(std::string_view t, bool inplace = false) { return {t, Dialect::Pir, inplace}; }

// One function per family file: appends its definitions.
void addMathOps(std::vector<OpDef>& defs);
void addNormOps(std::vector<OpDef>& defs);
void addShapeOps(std::vector<OpDef>& defs);
void addReduceOps(std::vector<OpDef>& defs);
void addMiscOps(std::vector<OpDef>& defs);
void addTrainOps(std::vector<OpDef>& defs);
void addCollectiveOps(std::vector<OpDef>& defs);
void addVisionOps(std::vector<OpDef>& defs);
void addAmpOps(std::vector<OpDef>& defs);
void addLlamaOps(std::vector<OpDef>& defs);
void addIndexOps(std::vector<OpDef>& defs);
void addUpsampleOps(std::vector<OpDef>& defs);

}  // namespace spopt::ops
