// Masks and indexing: tril_triu (and PIR's tril / triu), where, full_like, squeeze, slice, stack,
// expand and gather_nd, with the grads training needs. Their shape arithmetic is ops/index_math.h,
// shared with the kernels.
#include "ops/index_math.h"
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

double indexNumel(const Var* v) {
  if (!v) return 0;
  int64_t n = v->numel();
  return n < 0 ? 0 : double(n);
}

// Out like X, X at least 2-D (the mask is on the last two dims).
Result ruleTriangle(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  if (x->shape.size() < 2) return fail(op, "/inputs/X/0", "X " + dimsText(x->shape) + " should have at least 2 dims");
  return requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape");
}

// where: Condition (bool), X and Y of one shape (Paddle's op: the API broadcasts before it).
Result checkWhere(const OpView& op, bool grad) {
  const Var *c = op.in("Condition"), *x = op.in("X"), *y = op.in("Y");
  if (c && dtypeStorage(c->dtype) != DTypeStorage::U8)
    return fail(op, "/inputs/Condition/0", "Condition is " + std::string(dtypeName(c->dtype)) + ", not bool");
  if (auto e = requireSameStorage(op, "/inputs", "Y", y, "X", x)) return e;
  if (!known(x)) return std::nullopt;
  if (auto e = requireDims(op, "/inputs", "Condition", c, x->shape, "X's shape")) return e;
  if (auto e = requireDims(op, "/inputs", "Y", y, x->shape, "X's shape")) return e;
  if (!grad) {
    if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
    return requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape");
  }
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), x->shape, "X's shape")) return e;
  if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape")) return e;
  return requireDims(op, "/outputs", "Y@GRAD", op.out("Y@GRAD"), x->shape, "X's shape");
}
Result ruleWhere(const OpView& op) { return checkWhere(op, false); }
Result ruleWhereGrad(const OpView& op) { return checkWhere(op, true); }

// full_like: Out has X's shape (its own dtype: the dtype attribute, when given, names it).
Result ruleFullLike(const OpView& op) {
  const Var* x = op.in("X");
  return known(x) ? requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape") : std::nullopt;
}

// squeeze2 and its grad: Out is X without the size-1 dims of axes; XShape is [0, ...X dims]. The
// grad reads X's dims from XShape (legacy) or from operand 0 (PIR: x, or an earlier xshape).
Result ruleSqueeze(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  return ruleDimsFromAttr(op, "axes", resolveSqueeze, "X without the size-1 dims of axes");
}
Result ruleSqueezeGrad(const OpView& op) {
  const Var *x = op.in("X"), *xs = op.in("XShape"), *g = op.in("Out@GRAD"), *dx = op.out("X@GRAD");
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", dx, "Out@GRAD", g)) return e;
  if (!x && !xs && op.dialect() == Dialect::Pir) return fail(op, "/inputs", "missing input X (operand 0)");
  const Var* v = x ? x : xs;
  if (!known(v)) return std::nullopt;
  std::string why;
  auto xdims = squeezeGradXDims(v->shape, !x, known(dx) ? ShapeDims(dx->shape) : ShapeDims{}, &why);
  if (!xdims) return fail(op, "/inputs/XShape/0", why);
  if (auto e = requireDims(op, "/outputs", "X@GRAD", dx, *xdims, x ? "X's dims" : "XShape's dims[1:]")) return e;
  int64_t n = 1;
  for (int64_t d : *xdims) n *= d;
  if (known(g) && g->numel() != n)
    return fail(op, "/inputs/Out@GRAD/0", "Out@GRAD " + dimsText(g->shape) + " does not hold X's " + dimsText(*xdims) + " elements");
  return std::nullopt;
}

// slice and its grad: the box of Input that starts / ends / axes name (tensor-given bounds are
// data: then only Out's rank is not checked).
Result checkSlice(const OpView& op, bool grad) {
  const Var* in = op.in("Input");
  const char* dir = grad ? "/inputs" : "/outputs";
  const char* slot = grad ? "Out@GRAD" : "Out";
  const Var* out = grad ? op.in("Out@GRAD") : op.out("Out");
  if (auto e = requireSameStorage(op, dir, slot, out, "Input", in)) return e;
  if (grad && known(in))
    if (auto e = requireDims(op, "/outputs", "Input@GRAD", op.out("Input@GRAD"), in->shape, "Input's shape")) return e;
  if (!known(in) || hasArg(op.input("StartsTensor")) || hasArg(op.input("EndsTensor")) || op.inputCount("StartsTensorList") > 0 ||
      op.inputCount("EndsTensorList") > 0)
    return std::nullopt;
  auto axes = intsAttr(op, "axes", {}), starts = intsAttr(op, "starts", {}), ends = intsAttr(op, "ends", {});
  auto decrease = intsAttr(op, "decrease_axis", {});
  if (!axes || !starts || !ends || !decrease) return std::nullopt;
  std::string why;
  auto box = resolveSlice(in->shape, *axes, *starts, *ends, *decrease, &why);
  if (!box) return fail(op, why.starts_with("decrease_axis") ? "/attrs/decrease_axis" : "/attrs/axes", why);
  // Every dim decreased away: Paddle 2 keeps [1], Paddle 3 gives a 0-D tensor.
  if (box->out.empty() && known(out) && (out->shape.empty() || out->shape == ShapeDims{1})) return std::nullopt;
  return requireDims(op, dir, slot, out, box->out, "Input sliced by starts, ends and axes");
}
Result ruleSlice(const OpView& op) { return checkSlice(op, false); }
Result ruleSliceGrad(const OpView& op) { return checkSlice(op, true); }

// stack: the parts (legacy X, one slot each) share their dims; Y is them joined along a new axis.
Result ruleStack(const OpView& op) {
  if (op.dialect() == Dialect::Pir) return std::nullopt;  // X is one vector (builtin.combine): replay checks its parts
  const Slot* xs = op.input("X");
  if (!hasArg(xs)) return fail(op, "/inputs", "missing input X");
  const Var* x0 = xs->args[0].var;
  for (size_t i = 0; i < xs->args.size(); ++i) {
    const Var* xi = xs->args[i].var;
    if (xi && x0 && dtypeStorage(xi->dtype) != dtypeStorage(x0->dtype))
      return fail(op, "/inputs/X/" + std::to_string(i),
                  "X[" + std::to_string(i) + "] is " + std::string(dtypeName(xi->dtype)) + " but X[0] is " + std::string(dtypeName(x0->dtype)));
    if (known(xi) && known(x0) && xi->shape != x0->shape)
      return fail(op, "/inputs/X/" + std::to_string(i),
                  "X[" + std::to_string(i) + "] " + dimsText(xi->shape) + " differs from X[0] " + dimsText(x0->shape));
  }
  if (!known(x0)) return std::nullopt;
  auto axis = intAttr(op, "axis", 0);
  if (!axis) return std::nullopt;
  int64_t a = *axis;
  std::string why;
  auto want = resolveStack(x0->shape, int64_t(xs->args.size()), &a, &why);
  if (!want) return fail(op, "/attrs/axis", why);
  return requireDims(op, "/outputs", "Y", op.out("Y"), *want, "the parts stacked along axis");
}

// stack_grad (legacy): each X@GRAD is one part of Y@GRAD along axis.
Result ruleStackGrad(const OpView& op) {
  if (op.dialect() == Dialect::Pir) return std::nullopt;  // X@GRAD is one vector
  const Var* g = op.in("Y@GRAD");
  const Slot* dxs = op.output("X@GRAD");
  if (!known(g) || !hasArg(dxs)) return std::nullopt;
  auto axis = intAttr(op, "axis", 0);
  if (!axis) return std::nullopt;
  int64_t r = int64_t(g->shape.size()), a = *axis < 0 ? *axis + r : *axis;
  if (a < 0 || a >= r) return fail(op, "/attrs/axis", "axis " + std::to_string(*axis) + " is out of range for Y@GRAD " + dimsText(g->shape));
  if (g->shape[size_t(a)] != int64_t(dxs->args.size()))
    return fail(op, "/outputs/X@GRAD", "Y@GRAD " + dimsText(g->shape) + " has " + std::to_string(g->shape[size_t(a)]) + " parts along axis " +
                                           std::to_string(a) + " but there are " + std::to_string(dxs->args.size()) + " X@GRAD");
  ShapeDims part = g->shape;
  part.erase(part.begin() + a);
  for (size_t i = 0; i < dxs->args.size(); ++i)
    if (const Var* v = dxs->args[i].var; known(v) && v->shape != part)
      return fail(op, "/outputs/X@GRAD/" + std::to_string(i),
                  "X@GRAD " + dimsText(v->shape) + " should be " + dimsText(part) + " (a part of Y@GRAD)");
  return std::nullopt;
}

// expand_v2 and its grad: Out is X broadcast to shape; X@GRAD has X's shape.
Result checkExpand(const OpView& op, bool grad) {
  const Var* x = op.in("X");
  const char* dir = grad ? "/inputs" : "/outputs";
  const char* slot = grad ? "Out@GRAD" : "Out";
  const Var* out = grad ? op.in("Out@GRAD") : op.out("Out");
  if (!grad)
    if (auto e = requireSameStorage(op, dir, slot, out, "X", x)) return e;
  if (!known(x)) return std::nullopt;
  if (grad)
    if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape")) return e;
  if (hasArg(op.input("Shape")) || op.inputCount("expand_shapes_tensor") > 0) return std::nullopt;
  auto shape = intsAttr(op, "shape", {});
  if (!shape) return std::nullopt;
  std::string why;
  auto want = resolveExpand(x->shape, *shape, &why);
  if (!want) return fail(op, "/attrs/shape", why);
  return requireDims(op, dir, slot, out, *want, "X expanded to shape");
}
Result ruleExpand(const OpView& op) { return checkExpand(op, false); }
Result ruleExpandGrad(const OpView& op) { return checkExpand(op, true); }

// gather_nd and its grad: Index is integer, its last dim picks X's leading dims.
Result checkGatherNd(const OpView& op, bool grad) {
  const Var *x = op.in("X"), *index = op.in("Index");
  if (index && dtypeStorage(index->dtype) != DTypeStorage::I64)
    return fail(op, "/inputs/Index/0", "Index is " + std::string(dtypeName(index->dtype)) + ", not int32 or int64");
  if (!known(x) || !known(index)) return std::nullopt;
  std::string why;
  auto want = resolveGatherNd(x->shape, index->shape, &why);
  if (!want) return fail(op, "/inputs/Index/0", why);
  if (!grad) {
    if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
    return requireDims(op, "/outputs", "Out", op.out("Out"), *want, "Index's leading dims, then X's after k");
  }
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), *want, "Index's leading dims, then X's after k")) return e;
  return requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape");
}
Result ruleGatherNd(const OpView& op) { return checkGatherNd(op, false); }
Result ruleGatherNdGrad(const OpView& op) { return checkGatherNd(op, true); }

// A sum of Out@GRAD into X@GRAD: one add per Out@GRAD element.
double flopsScatterBack(const OpView& op) { return indexNumel(op.in("Out@GRAD")); }

constexpr uint32_t kIndexMove = trait::MovesOnly | trait::Recomputable;

}  // namespace

void addIndexOps(std::vector<OpDef>& d) {
  // Legacy programs write one tril_triu with `lower`; PIR writes tril or triu, which say it.
  d.push_back({.name = "tril_triu", .spellings = {legacyName("tril_triu"), pirName("pd_op.tril_triu")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = {{"diagonal", AttrKind::Int}, {"lower", AttrKind::Bool}},
               .traits = kIndexMove, .rule = ruleTriangle});
  d.push_back({.name = "tril", .spellings = {pirName("pd_op.tril"), pirName("pd_op.tril_", true)}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = {{"diagonal", AttrKind::Int}}, .traits = kIndexMove, .rule = ruleTriangle});
  d.push_back({.name = "triu", .spellings = {pirName("pd_op.triu"), pirName("pd_op.triu_", true)}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = {{"diagonal", AttrKind::Int}}, .traits = kIndexMove, .rule = ruleTriangle});
  d.push_back({.name = "where", .spellings = {legacyName("where"), pirName("pd_op.where"), pirName("pd_op.where_", true)},
               .inputs = {{"Condition", {}, 0, true}, {"X", {}, 1, true}, {"Y", {}, 2, true}}, .outputs = {{"Out", {}, 0, true}},
               .traits = trait::Elementwise | kIndexMove, .rule = ruleWhere, .grad = "where_grad"});
  // The grads route Out@GRAD by Condition: X's and Y's values are never read.
  d.push_back({.name = "where_grad", .spellings = {legacyName("where_grad"), pirName("pd_op.where_grad")},
               .inputs = {{"Condition", {}, 0, true}, {"X", {}, 1, true, false}, {"Y", {}, 2, true, false}, {"Out@GRAD", {}, 3, true}},
               .outputs = {{"X@GRAD", {}, 0}, {"Y@GRAD", {}, 1}}, .traits = trait::Grad | trait::MovesOnly, .rule = ruleWhereGrad});
  // PIR passes the value as a Scalar operand (a pd_op.full). Only X's shape is read.
  d.push_back({.name = "full_like", .spellings = {legacyName("fill_any_like"), pirName("pd_op.full_like")},
               .inputs = {{"X", {}, 0, true, false}}, .outputs = {{"Out", {}, 0, true}}, .attrs = {{"value", AttrKind::Float, {}, 1}},
               .traits = kIndexMove, .rule = ruleFullLike});
  OperandDef xshape_out{"XShape", {}, 1, false, false};
  d.push_back({.name = "squeeze", .spellings = {legacyName("squeeze2"), pirName("pd_op.squeeze"), pirName("pd_op.squeeze_", true)},
               .inputs = {{"X", {}, 0, true}, {"AxesTensor"}, {"AxesTensorList"}}, .outputs = {{"Out", {}, 0, true}, xshape_out},
               .attrs = {{"axes", AttrKind::Ints, "axis", 1}}, .traits = kIndexMove | trait::View,
               .rule = ruleSqueeze, .grad = "squeeze_grad"});
  d.push_back({.name = "squeeze_grad", .spellings = {legacyName("squeeze2_grad"), pirName("pd_op.squeeze_grad")},
               .inputs = {{"XShape", {}, -1, true, false}, {"X", {}, 0, false, false}, {"Out@GRAD", {}, 1, true}},
               .outputs = {{"X@GRAD", {}, 0, true}}, .attrs = {{"axes", AttrKind::Ints, "axis", 2}},
               .traits = trait::MovesOnly | trait::Grad | trait::View, .rule = ruleSqueezeGrad});
  std::vector<AttrDef> slice_attrs = {{"axes", AttrKind::Ints}, {"starts", AttrKind::Ints, {}, 1}, {"ends", AttrKind::Ints, {}, 2},
                                      {"infer_flags", AttrKind::Ints}, {"decrease_axis", AttrKind::Ints}};
  d.push_back({.name = "slice", .spellings = {legacyName("slice"), pirName("pd_op.slice")},
               .inputs = {{"Input", {}, 0, true}, {"StartsTensor"}, {"EndsTensor"}, {"StartsTensorList"}, {"EndsTensorList"}},
               .outputs = {{"Out", {}, 0, true}}, .attrs = slice_attrs, .traits = kIndexMove, .rule = ruleSlice, .grad = "slice_grad"});
  std::vector<AttrDef> slice_grad_attrs = slice_attrs;
  slice_grad_attrs[1].pir_operand = 2;
  slice_grad_attrs[2].pir_operand = 3;
  d.push_back({.name = "slice_grad", .spellings = {legacyName("slice_grad"), pirName("pd_op.slice_grad")},
               .inputs = {{"Input", {}, 0, true, false}, {"Out@GRAD", {}, 1, true}, {"StartsTensor"}, {"EndsTensor"},
                          {"StartsTensorList"}, {"EndsTensorList"}},
               .outputs = {{"Input@GRAD", {}, 0, true}}, .attrs = slice_grad_attrs, .traits = trait::Grad | trait::MovesOnly,
               .rule = ruleSliceGrad});
  // PIR's X is one vector (builtin.combine); stack_grad gives one back (read by builtin.slice).
  d.push_back({.name = "stack", .spellings = {legacyName("stack"), pirName("pd_op.stack")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Y", {}, 0, true}}, .attrs = {{"axis", AttrKind::Int}}, .traits = kIndexMove, .rule = ruleStack,
               .grad = "stack_grad"});
  d.push_back({.name = "stack_grad", .spellings = {legacyName("stack_grad"), pirName("pd_op.stack_grad")},
               .inputs = {{"X", {}, 0, false, false}, {"Y@GRAD", {}, 1, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .attrs = {{"axis", AttrKind::Int}}, .traits = trait::Grad | trait::MovesOnly | trait::VectorResult, .rule = ruleStackGrad});
  d.push_back({.name = "expand", .spellings = {legacyName("expand_v2"), pirName("pd_op.expand")},
               .inputs = {{"X", {}, 0, true}, {"Shape"}, {"expand_shapes_tensor"}}, .outputs = {{"Out", {}, 0, true}},
               .attrs = {{"shape", AttrKind::Ints, {}, 1}}, .traits = kIndexMove, .rule = ruleExpand, .grad = "expand_grad"});
  d.push_back({.name = "expand_grad", .spellings = {legacyName("expand_v2_grad"), pirName("pd_op.expand_grad")},
               .inputs = {{"X", {}, 0, true, false}, {"Out@GRAD", {}, 1, true}, {"Shape"}, {"expand_shapes_tensor"}},
               .outputs = {{"X@GRAD", {}, 0, true}}, .attrs = {{"shape", AttrKind::Ints, {}, 2}}, .traits = trait::Grad,
               .rule = ruleExpandGrad, .cost = {.flops = flopsScatterBack}});
  d.push_back({.name = "gather_nd", .spellings = {legacyName("gather_nd"), pirName("pd_op.gather_nd")},
               .inputs = {{"X", {}, 0, true}, {"Index", {}, 1, true}}, .outputs = {{"Out", {}, 0, true}}, .traits = kIndexMove,
               .rule = ruleGatherNd, .grad = "gather_nd_grad"});
  d.push_back({.name = "gather_nd_grad", .spellings = {legacyName("gather_nd_grad"), pirName("pd_op.gather_nd_grad")},
               .inputs = {{"X", {}, 0, true, false}, {"Index", {}, 1, true}, {"Out@GRAD", {}, 2, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .traits = trait::Grad, .rule = ruleGatherNdGrad, .cost = {.flops = flopsScatterBack}});
}

}  // namespace spopt::ops
