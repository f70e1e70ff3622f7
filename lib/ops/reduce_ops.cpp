// Reductions and add_n (legacy `sum`): definitions and their rules.
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

// The declared shape of a reduction of `x` (runtime/kernels/reduce.cpp reduceSpec): `dim` (default
// [0]) normalised, all dims when reduce_all, dim is empty or x is 0-D (and always for mean_all).
Result reducedShape(const OpView& op, bool all_by_op, const Var* x, std::string_view dir, std::string_view slot, const Var* y) {
  auto reduce_all = boolAttr(op, "reduce_all", false);
  auto dims = all_by_op ? std::optional<ShapeDims>(ShapeDims{}) : intsAttr(op, "dim", {0});
  auto keep = boolAttr(op, "keep_dim", false);
  if (!reduce_all || !dims || !keep) return std::nullopt;
  bool all = all_by_op || *reduce_all || dims->empty() || x->shape.empty();
  bool keep_dim = !all_by_op && *keep;
  size_t r = x->shape.size();
  std::vector<bool> reduced(r, all);
  for (int64_t d : *dims) {
    if (all) break;
    int64_t a = d < 0 ? d + int64_t(r) : d;
    if (a < 0 || a >= int64_t(r)) return fail(op, "/attrs/dim", "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(r));
    reduced[size_t(a)] = true;
  }
  ShapeDims out;
  for (size_t d = 0; d < r; ++d)
    if (!reduced[d]) out.push_back(x->shape[d]);
    else if (keep_dim) out.push_back(1);
  if (out.empty() && known(y) && y->shape == ShapeDims{1}) return std::nullopt;  // [1] or [] for a full reduction
  return requireDims(op, dir, slot, y, out, "X reduced");
}

Result checkReduce(const OpView& op, bool all_by_op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  return reducedShape(op, all_by_op, x, "/outputs", "Out", op.out("Out"));
}

// reduce_*_grad: X@GRAD has X's shape (when X is given) and Out@GRAD is X@GRAD reduced.
Result checkReduceGrad(const OpView& op, bool all_by_op) {
  const Var *g = op.in("Out@GRAD"), *dx = op.out("X@GRAD");
  if (auto e = requireFloat(op, "Out@GRAD", g)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", dx, "Out@GRAD", g)) return e;
  if (!known(dx)) return std::nullopt;
  if (const Var* x = op.in("X"); known(x))
    if (auto e = requireDims(op, "/outputs", "X@GRAD", dx, x->shape, "the shape of X")) return e;
  return reducedShape(op, all_by_op, dx, "/inputs", "Out@GRAD", g);
}
Result ruleReduce(const OpView& op) { return checkReduce(op, false); }
Result ruleMeanAll(const OpView& op) { return checkReduce(op, true); }
Result ruleReduceGrad(const OpView& op) { return checkReduceGrad(op, false); }
Result ruleMeanAllGrad(const OpView& op) { return checkReduceGrad(op, true); }

// add_n (legacy sum): every X stored and shaped like Out, which is floating.
Result ruleAddN(const OpView& op) {
  if (op.dialect() == Dialect::Pir) return std::nullopt;  // X is one vector (builtin.combine): replay checks its parts
  const Var* out = op.out("Out");
  if (!out) return std::nullopt;
  auto st = dtypeStorage(out->dtype);
  if (st != DTypeStorage::F32 && st != DTypeStorage::F64)
    return fail(op, "/outputs/Out/0", "Out is " + std::string(dtypeName(out->dtype)) + ", not a floating type");
  const Slot* xs = op.input("X");
  for (size_t i = 0; xs && i < xs->args.size(); ++i) {
    const Var* x = xs->args[i].var;
    std::string name = "X[" + std::to_string(i) + "]", at = "/inputs/X/" + std::to_string(i);
    if (dtypeStorage(x->dtype) != st)
      return fail(op, at, name + " is " + std::string(dtypeName(x->dtype)) + " but Out is " + std::string(dtypeName(out->dtype)));
    if (known(x) && known(out) && x->shape != out->shape)
      return fail(op, at, name + " " + dimsText(x->shape) + " differs from Out " + dimsText(out->shape));
  }
  return std::nullopt;
}

// One FLOP per output element for each input beyond the first.
double flopsAddN(const OpView& op) {
  const Var* out = op.out("Out");
  double n = out && out->numel() > 0 ? double(out->numel()) : 0;
  return n * double(std::max<size_t>(op.inputCount("X"), 1) - 1);
}

}  // namespace

void addReduceOps(std::vector<OpDef>& d) {
  // PIR calls them axis and keepdim; the axis may come as an IntArray operand.
  std::vector<AttrDef> reduce_attrs = {{"dim", AttrKind::Ints, "axis", 1}, {"keep_dim", AttrKind::Bool, "keepdim"},
                                       {"reduce_all", AttrKind::Bool}};
  std::vector<AttrDef> grad_attrs = {{"dim", AttrKind::Ints, "axis", 2}, {"keep_dim", AttrKind::Bool, "keepdim"},
                                     {"reduce_all", AttrKind::Bool}};
  std::vector<OperandDef> grad_in = {{"X", {}, 0, false, false}, {"Out@GRAD", {}, 1, true}};
  std::vector<OperandDef> x_in = {{"X", {}, 0, true}}, out = {{"Out", {}, 0, true}}, dx = {{"X@GRAD", {}, 0, true}};
  constexpr uint32_t kPure = trait::Recomputable;
  d.push_back({.name = "sum", .spellings = {legacyName("reduce_sum"), pirName("pd_op.sum")}, .inputs = x_in, .outputs = out,
               .attrs = reduce_attrs, .traits = kPure, .rule = ruleReduce, .cost = {1, "X", true}, .grad = "sum_grad"});
  d.push_back({.name = "mean", .spellings = {legacyName("reduce_mean"), pirName("pd_op.mean")}, .inputs = x_in, .outputs = out,
               .attrs = reduce_attrs, .traits = kPure, .rule = ruleReduce, .cost = {1, "X", true}, .grad = "mean_grad"});
  d.push_back({.name = "mean_all", .spellings = {legacyName("mean"), pirName("pd_op.mean_all")}, .inputs = x_in, .outputs = out,
               .traits = kPure, .rule = ruleMeanAll, .cost = {1, "X", true}, .grad = "mean_all_grad"});
  d.push_back({.name = "sum_grad", .spellings = {legacyName("reduce_sum_grad"), pirName("pd_op.sum_grad")}, .inputs = grad_in,
               .outputs = dx, .attrs = grad_attrs, .traits = trait::Grad, .rule = ruleReduceGrad, .cost = {0, "X@GRAD"}});
  d.push_back({.name = "mean_grad", .spellings = {legacyName("reduce_mean_grad"), pirName("pd_op.mean_grad")}, .inputs = grad_in,
               .outputs = dx, .attrs = grad_attrs, .traits = trait::Grad, .rule = ruleReduceGrad, .cost = {1, "X@GRAD"}});
  d.push_back({.name = "mean_all_grad", .spellings = {legacyName("mean_grad"), pirName("pd_op.mean_all_grad")},
               .inputs = grad_in, .outputs = dx, .traits = trait::Grad, .rule = ruleMeanAllGrad, .cost = {1, "X@GRAD"}});
  // PIR's add_n reads one vector (a builtin.combine).
  d.push_back({.name = "add_n", .spellings = {legacyName("sum"), pirName("pd_op.add_n")}, .inputs = x_in, .outputs = out, .traits = kPure,
               .rule = ruleAddN, .cost = {.flops = flopsAddN}});
}

}  // namespace spopt::ops
