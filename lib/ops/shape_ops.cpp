// Reshape, transpose, split and concat, and PIR's vector ops: definitions and their rules.
#include "analysis/split_sections.h"
#include "ops/rule_support.h"
#include "ops/vector_parts.h"

namespace spopt::ops {
namespace {

int64_t normAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

Result ruleReshape(const OpView& op) {
  if (hasArg(op.input("Shape"))) return std::nullopt;  // a Shape input is data
  return ruleDimsFromAttr(op, "shape", resolveReshape, "X reshaped");
}

Result ruleUnsqueeze(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (hasArg(op.input("AxesTensor")) || op.inputCount("AxesTensorList") > 0) return std::nullopt;
  return ruleDimsFromAttr(op, "axes", resolveUnsqueeze, "X with a 1 at each of axes");
}

Result ruleTranspose(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  auto axis = intsAttr(op, "axis", {});
  if (!axis) return std::nullopt;
  auto perm = resolvePermutation(*axis, x->shape.size());
  if (!perm) return fail(op, "/attrs/axis", "axis " + dimsText(*axis) + " is no permutation of " + std::to_string(x->shape.size()) + " dims");
  ShapeDims want(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) want[i] = x->shape[size_t((*perm)[i])];
  if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), want, "X transposed by axis")) return e;
  return checkXShape(op, x);
}

// reshape2_grad / transpose2_grad: XShape is [0, ...X dims]; X@GRAD has X's dims; for transpose2,
// Out@GRAD is X transposed by axis.
Result checkShapeGrad(const OpView& op, bool transpose) {
  const Var *xs = op.in("XShape"), *g = op.in("Out@GRAD"), *dx = op.out("X@GRAD");
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", dx, "Out@GRAD", g)) return e;
  if (!known(xs)) return std::nullopt;
  if (xs->shape.empty()) return fail(op, "/inputs/XShape/0", "XShape [] should be [0, ...X dims]");
  ShapeDims xdims(xs->shape.begin() + 1, xs->shape.end());
  if (auto e = requireDims(op, "/outputs", "X@GRAD", dx, xdims, "XShape's dims[1:]")) return e;
  if (!transpose) return std::nullopt;
  auto axis = intsAttr(op, "axis", {});
  if (!axis) return std::nullopt;
  auto perm = resolvePermutation(*axis, xdims.size());
  if (!perm) return fail(op, "/attrs/axis", "axis " + dimsText(*axis) + " is no permutation of " + std::to_string(xdims.size()) + " dims");
  ShapeDims want(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) want[i] = xdims[size_t((*perm)[i])];
  return requireDims(op, "/inputs", "Out@GRAD", g, want, "X transposed by axis");
}
Result ruleReshapeGrad(const OpView& op) { return checkShapeGrad(op, false); }
Result ruleTransposeGrad(const OpView& op) { return checkShapeGrad(op, true); }

// split's parts match X off the axis and add up to it; num or sections (its -1 resolved,
// analysis/split_sections.h) give the parts' sizes, as replay's kernel splits by them.
Result ruleSplit(const OpView& op) {
  const Var* x = op.in("X");
  const Slot* outs = op.output("Out");
  std::string t(op.type);
  if (!x || !outs || outs->args.empty()) return OpRuleError{"", t + " needs input X and outputs Out"};
  if (!known(x)) return std::nullopt;
  int64_t axis = normAxis(op.attrs.getInt("axis").value_or(0), x->shape.size());
  if (axis < 0 || axis >= int64_t(x->shape.size()))
    return OpRuleError{"/attrs/axis", t + " axis is out of range for input " + typeText(*x)};
  int64_t total = 0;
  for (const auto& a : outs->args) {
    if (!known(a.var)) return std::nullopt;
    const Var* y = a.var;
    bool same = y->shape.size() == x->shape.size() && y->dtype == x->dtype;
    for (size_t d = 0; same && d < x->shape.size(); ++d)
      if (int64_t(d) != axis && y->shape[d] != x->shape[d]) same = false;
    if (!same)
      return OpRuleError{"", t + " output \"" + std::string(y->name) + "\" " + typeText(*y) + " does not match input " + typeText(*x) +
                                 " off the split axis"};
    total += y->shape[size_t(axis)];
  }
  int64_t len = x->shape[size_t(axis)];
  if (total != len)
    return OpRuleError{"", t + " outputs sum to " + std::to_string(total) + " along axis " + std::to_string(axis) + " but input " +
                               typeText(*x) + " has " + std::to_string(len)};
  auto num = op.attrs.getInt("num");
  auto sections = op.attrs.getIntArray("sections");
  if (sections && !sections->empty() && !(num && *num > 0)) {
    std::string why;
    auto resolved = resolveSplitSections(*sections, len, &why);
    std::string text = t + " sections " + dimsText(*sections);
    if (!resolved) return OpRuleError{"/attrs/sections", text + " " + why + " (" + std::to_string(len) + " along axis " + std::to_string(axis) + ")"};
    if (resolved->size() != outs->args.size())
      return OpRuleError{"/attrs/sections", text + " give " + std::to_string(resolved->size()) + " parts but it has " +
                                                std::to_string(outs->args.size()) + " outputs"};
    for (size_t i = 0; i < resolved->size(); ++i)
      if ((*resolved)[i] != outs->args[i].var->shape[size_t(axis)])
        return OpRuleError{"/attrs/sections", text + " give part " + std::to_string(i) + " " + std::to_string((*resolved)[i]) +
                                                  " rows along axis " + std::to_string(axis) + ", but output \"" +
                                                  std::string(outs->args[i].var->name) + "\" has " +
                                                  std::to_string(outs->args[i].var->shape[size_t(axis)])};
  }
  if (!(num && *num > 0) && !(sections && !sections->empty()))
    return OpRuleError{"/attrs", t + " needs num > 0 or non-empty sections (replay splits by them)"};
  if (num && *num > 0 && *num != int64_t(outs->args.size()))
    return OpRuleError{"/attrs/num", t + " num is " + std::to_string(*num) + " but it has " + std::to_string(outs->args.size()) + " outputs"};
  if (num && *num > 0 && len % *num != 0)
    return OpRuleError{"/attrs/num", t + " num " + std::to_string(*num) + " does not divide " + std::to_string(len)};
  return std::nullopt;
}

// PIR's split_with_num: one vector result of `num` equal parts (the var's shape is [num]).
Result ruleSplitWithNum(const OpView& op) {
  const Var* x = op.in("X");
  const Var* out = op.out("Out");
  if (!known(x) || !out) return std::nullopt;
  auto num = op.attrs.getInt("num");
  if (!num || *num <= 0) return fail(op, "/attrs/num", "num must be a positive integer");
  auto axis_raw = intAttr(op, "axis", 0);
  if (!axis_raw) return fail(op, "/attrs/axis", "axis must be a constant integer (a pd_op.full)");
  int64_t axis = normAxis(*axis_raw, x->shape.size());
  if (axis < 0 || axis >= int64_t(x->shape.size())) return fail(op, "/attrs/axis", "axis is out of range for X " + dimsText(x->shape));
  if (x->shape[size_t(axis)] % *num != 0)
    return fail(op, "/attrs/num", "num " + std::to_string(*num) + " does not divide " + std::to_string(x->shape[size_t(axis)]));
  return requireDims(op, "/outputs", "Out", out, {*num}, "a vector of num parts");
}

// builtin.slice: the index names an element of the vector.
Result ruleVectorSlice(const OpView& op) {
  const Var* v = op.in("X");
  auto index = op.attrs.getInt("index");
  if (!index) return fail(op, "/attrs/index", "index must be an integer");
  if (!known(v) || v->shape.size() != 1) return std::nullopt;
  if (*index < 0 || *index >= v->shape[0])
    return fail(op, "/attrs/index", "index " + std::to_string(*index) + " is outside the vector of " + std::to_string(v->shape[0]));
  return std::nullopt;
}

// PIR's concat reads X as one vector: where builtin.combine says its parts' shapes and they agree
// off the axis (else replay's kernel reports them), Out is them joined along it.
Result ruleConcatVector(const OpView& op) {
  const Var *x = op.in("X"), *y = op.out("Out");
  auto parts = x ? vectorPartShapes(*x) : std::nullopt;
  if (!parts || parts->empty() || !known(y)) return std::nullopt;
  ShapeDims joined = parts->front();
  auto axis_attr = intAttr(op, "axis", 0);  // PIR's pd_op.full writes the axis as 1.0
  if (!axis_attr) return std::nullopt;
  int64_t axis = normAxis(*axis_attr, joined.size());
  if (axis < 0 || axis >= int64_t(joined.size())) return std::nullopt;
  joined[size_t(axis)] = 0;
  for (const auto& part : *parts) {
    if (part.size() != joined.size()) return std::nullopt;
    for (size_t d = 0; d < part.size(); ++d) {
      if (part[d] < 0 || (int64_t(d) != axis && part[d] != joined[d])) return std::nullopt;
    }
    joined[size_t(axis)] += part[size_t(axis)];
  }
  return requireDims(op, "/outputs", "Out", y, joined, "X joined along axis");
}

Result ruleConcat(const OpView& op) {
  if (op.dialect() == Dialect::Pir) return ruleConcatVector(op);
  const Slot* xs = op.input("X");
  const Var* y = op.out("Out");
  std::string t(op.type);
  if (!xs || xs->args.empty() || !y) return OpRuleError{"", t + " needs inputs X and output Out"};
  if (!known(y)) return std::nullopt;
  int64_t axis = normAxis(op.attrs.getInt("axis").value_or(0), y->shape.size());
  if (axis < 0 || axis >= int64_t(y->shape.size())) return OpRuleError{"/attrs/axis", t + " axis is out of range for output " + typeText(*y)};
  int64_t total = 0;
  for (const auto& a : xs->args) {
    if (!known(a.var)) return std::nullopt;
    if (a.var->shape.size() != y->shape.size())
      return OpRuleError{"", t + " input \"" + std::string(a.name) + "\" has rank " + std::to_string(a.var->shape.size()) + ", output " + typeText(*y)};
    for (size_t d = 0; d < y->shape.size(); ++d)  // replay's kernel joins inputs equal off the axis
      if (int64_t(d) != axis && a.var->shape[d] != y->shape[d])
        return OpRuleError{"", t + " input \"" + std::string(a.name) + "\" " + typeText(*a.var) + " differs from output " + typeText(*y) +
                                   " outside axis " + std::to_string(axis)};
    total += a.var->shape[size_t(axis)];
  }
  if (total != y->shape[size_t(axis)])
    return OpRuleError{"", t + " inputs sum to " + std::to_string(total) + " along axis " + std::to_string(axis) + " but output is " + typeText(*y)};
  return std::nullopt;
}

constexpr uint32_t kMove = trait::MovesOnly | trait::Recomputable;

}  // namespace

void addShapeOps(std::vector<OpDef>& d) {
  // XShape ([0, ...X dims]) carries X's shape for the grad op and no data.
  OperandDef xshape_out{"XShape", {}, 1, false, false};
  d.push_back({.name = "reshape", .spellings = {legacyName("reshape2"), pirName("pd_op.reshape"), pirName("pd_op.reshape_", true)},
               .inputs = {{"X", {}, 0, true}, {"Shape"}}, .outputs = {{"Out", {}, 0, true}, xshape_out},
               .attrs = {{"shape", AttrKind::Ints, {}, 1}}, .traits = kMove | trait::View,
               .rule = ruleReshape, .grad = "reshape_grad"});
  d.push_back({.name = "reshape_grad", .spellings = {legacyName("reshape2_grad"), pirName("pd_op.reshape_grad")},
               .inputs = {{"XShape", {}, 0, true, false}, {"Out@GRAD", {}, 1, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .traits = trait::MovesOnly | trait::Grad | trait::View, .rule = ruleReshapeGrad});
  d.push_back({.name = "unsqueeze", .spellings = {legacyName("unsqueeze2"), pirName("pd_op.unsqueeze"), pirName("pd_op.unsqueeze_", true)},
               .inputs = {{"X", {}, 0, true}, {"AxesTensor"}, {"AxesTensorList"}}, .outputs = {{"Out", {}, 0, true}, xshape_out},
               .attrs = {{"axes", AttrKind::Ints, "axis", 1}}, .traits = kMove | trait::View,
               .rule = ruleUnsqueeze});
  d.push_back({.name = "transpose", .spellings = {legacyName("transpose2"), pirName("pd_op.transpose")},
               .inputs = {{"X", {}, 0, true}}, .outputs = {{"Out", {}, 0, true}, {"XShape", {}, -1, false, false}},
               .attrs = {{"axis", AttrKind::Ints, "perm"}}, .traits = kMove, .rule = ruleTranspose, .grad = "transpose_grad"});
  d.push_back({.name = "transpose_grad", .spellings = {legacyName("transpose2_grad"), pirName("pd_op.transpose_grad")},
               .inputs = {{"XShape", {}, -1, true, false}, {"Out@GRAD", {}, 0, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .attrs = {{"axis", AttrKind::Ints, "perm"}}, .traits = trait::MovesOnly | trait::Grad, .rule = ruleTransposeGrad});
  d.push_back({.name = "split", .spellings = {legacyName("split"), pirName("pd_op.split")}, .inputs = {{"X", {}, 0}},
               .outputs = {{"Out", {}, 0}},
               .attrs = {{"axis", AttrKind::Int, {}, 2}, {"num", AttrKind::Int}, {"sections", AttrKind::Ints, {}, 1}},
               .traits = kMove, .rule = ruleSplit, .grad = "concat"});
  d.push_back({.name = "split_with_num", .spellings = {pirName("pd_op.split_with_num")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = {{"axis", AttrKind::Int, {}, 1}, {"num", AttrKind::Int}},
               .traits = kMove | trait::VectorResult, .rule = ruleSplitWithNum, .grad = "concat"});
  d.push_back({.name = "vector_slice", .spellings = {pirName("builtin.slice")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = {{"index", AttrKind::Int}}, .traits = kMove | trait::View,
               .rule = ruleVectorSlice});
  // builtin.combine(in0, ..., in<k-1>) -> a vector of k values: its operands are positional, one
  // value each, so the definition names none.
  d.push_back({.name = "combine", .spellings = {pirName("builtin.combine")}, .outputs = {{"Out", {}, 0, true}},
               .traits = kMove | trait::VectorResult});
  // builtin.split(vector) -> out0, ..., out<k-1>: every part of a vector, positional like
  // builtin.combine's operands (what Paddle writes after an op with a Tensor[] result).
  d.push_back({.name = "vector_split", .spellings = {pirName("builtin.split")}, .inputs = {{"X", {}, 0, true}}, .traits = kMove});
  d.push_back({.name = "concat", .spellings = {legacyName("concat"), pirName("pd_op.concat")}, .inputs = {{"X", {}, 0}},
               .outputs = {{"Out", {}, 0}}, .attrs = {{"axis", AttrKind::Int, {}, 1}}, .traits = kMove, .rule = ruleConcat,
               .grad = "split"});
}

}  // namespace spopt::ops
