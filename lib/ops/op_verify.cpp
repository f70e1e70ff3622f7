#include "ops/op_verify.h"

#include "ops/rule_support.h"

namespace spopt {

std::optional<OpRuleError> checkOpDefinition(const OpView& op) {
  const OpDef* def = op.def();
  if (!def) return std::nullopt;
  auto mapped = [&](OpRuleError e) {
    e.where = op.pointer(e.where);
    return e;
  };
  // An attribute a kernel could not read (the rule below would skip it).
  for (const AttrDef& a : def->attrs) {
    auto raw = op.attrs.raw(a.name);
    if (!raw || attrReadsAs(*raw, a.kind)) continue;
    return mapped({"/attrs/" + std::string(a.name),
                   std::string(op.type) + ": attribute " + std::string(a.name) + " is not " + attrKindName(a.kind) + ": " + std::string(*raw)});
  }
  // A required operand the op's dialect does not have (PIR's transpose_grad has no XShape) is not missing.
  auto required = [&](const OperandDef& o) { return o.required && !(op.dialect() == Dialect::Pir && o.pir < 0); };
  for (const OperandDef& o : def->inputs)
    if (required(o) && !ops::hasArg(op.input(o.name))) return mapped(*ops::fail(op, "/inputs", "missing input " + std::string(o.name)));
  for (const OperandDef& o : def->outputs)
    if (required(o) && !ops::hasArg(op.output(o.name))) return mapped(*ops::fail(op, "/outputs", "missing output " + std::string(o.name)));
  if (def->rule)
    if (auto e = def->rule(op)) return mapped(std::move(*e));
  return std::nullopt;
}

}  // namespace spopt
