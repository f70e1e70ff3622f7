// Mixed precision and gradient clipping: cast, check_finite_and_unscale, update_loss_scaling,
// squared_l2_norm, sqrt, clip_by_norm (elementwise maximum / minimum are in math_ops.cpp with the
// other binary ops). How replay holds float16 / bfloat16 values: runtime/half.h.
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

Result requireOneElement(const OpView& op, std::string_view dir, std::string_view slot, const Var* v) {
  if (!known(v) || v->numel() == 1) return std::nullopt;
  return fail(op, std::string(dir) + "/" + std::string(slot) + "/0", std::string(slot) + " " + dimsText(v->shape) + " should hold one element");
}

Result requireIntegral(const OpView& op, std::string_view dir, std::string_view slot, const Var* v) {
  if (!v || dtypeStorage(v->dtype) == DTypeStorage::I64) return std::nullopt;
  return fail(op, std::string(dir) + "/" + std::string(slot) + "/0", std::string(slot) + " is " + std::string(dtypeName(v->dtype)) + ", not an integer type");
}

// A dtype attribute agrees with the var it describes (cast's out_dtype with Out).
Result requireDTypeAttr(const OpView& op, std::string_view key, std::string_view slot, const Var* v) {
  const std::string_view* raw = op.attrs.find(key);
  if (!raw || !v) return std::nullopt;
  std::optional<DType> t = dtypeFromAttr(*raw);
  if (!t || *t == v->dtype) return std::nullopt;  // unreadable: the attribute-kind check reports it
  return fail(op, "/attrs/" + std::string(key), std::string(key) + " " + std::string(dtypeName(*t)) + " disagrees with " +
                                                   std::string(slot) + "'s " + std::string(dtypeName(v->dtype)));
}

// Out has X's shape (and, unless `any_dtype`, its storage).
Result checkLikeX(const OpView& op, bool any_dtype) {
  const Var* x = op.in("X");
  if (!any_dtype) {
    if (auto e = requireFloat(op, "X", x)) return e;
    if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  }
  return known(x) ? requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape") : std::nullopt;
}
Result ruleLikeX(const OpView& op) { return checkLikeX(op, false); }

Result ruleCast(const OpView& op) {
  if (auto e = checkLikeX(op, true)) return e;
  if (auto e = requireDTypeAttr(op, "out_dtype", "Out", op.out("Out"))) return e;
  return requireDTypeAttr(op, "in_dtype", "X", op.in("X"));
}

// X[i] and Out[i] pair up, shaped alike (a PIR vector is one value: replay checks its parts).
Result checkListPairs(const OpView& op) {
  size_t n = op.inputCount("X");
  if (op.outputCount("Out") != n)
    return fail(op, "/outputs/Out", "has " + std::to_string(op.outputCount("Out")) + " vars for " + std::to_string(n) + " in X");
  for (size_t i = 0; i < n; ++i) {
    const Var *x = op.in("X", i), *o = op.out("Out", i);
    if (auto e = requireFloat(op, "X", x)) return e;
    if (known(x) && known(o) && x->shape != o->shape)
      return fail(op, "/outputs/Out/" + std::to_string(i), "Out " + dimsText(o->shape) + " should be " + dimsText(x->shape) + " (X's shape)");
  }
  return std::nullopt;
}

Result ruleCheckFinite(const OpView& op) {
  if (auto e = checkListPairs(op)) return e;
  if (auto e = requireOneElement(op, "/inputs", "Scale", op.in("Scale"))) return e;
  if (auto e = requireFloat(op, "Scale", op.in("Scale"))) return e;
  return requireOneElement(op, "/outputs", "FoundInfinite", op.out("FoundInfinite"));
}

Result ruleUpdateLossScaling(const OpView& op) {
  if (auto e = checkListPairs(op)) return e;
  if (auto e = requireOneElement(op, "/inputs", "FoundInfinite", op.in("FoundInfinite"))) return e;
  if (auto e = requireOneElement(op, "/inputs", "PrevLossScaling", op.in("PrevLossScaling"))) return e;
  if (auto e = requireFloat(op, "PrevLossScaling", op.in("PrevLossScaling"))) return e;
  if (auto e = requireOneElement(op, "/outputs", "LossScaling", op.out("LossScaling"))) return e;
  for (const char* s : {"InGoodSteps", "InBadSteps"}) {
    if (auto e = requireOneElement(op, "/inputs", s, op.in(s))) return e;
    if (auto e = requireIntegral(op, "/inputs", s, op.in(s))) return e;
  }
  for (const char* s : {"OutGoodSteps", "OutBadSteps"}) {
    if (auto e = requireOneElement(op, "/outputs", s, op.out(s))) return e;
    if (auto e = requireIntegral(op, "/outputs", s, op.out(s))) return e;
  }
  return std::nullopt;
}

// squared_l2_norm: one element, the sum of X's squares.
Result ruleSquaredL2Norm(const OpView& op) {
  if (auto e = requireFloat(op, "X", op.in("X"))) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", op.in("X"))) return e;
  return requireOneElement(op, "/outputs", "Out", op.out("Out"));
}
Result ruleSquaredL2NormGrad(const OpView& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireOneElement(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"))) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", op.out("X@GRAD"), "X", x)) return e;
  return known(x) ? requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape") : std::nullopt;
}

// sqrt_grad reads Out (dX = dOut / (2 Out)): Out@GRAD and X@GRAD are shaped like it.
Result ruleSqrtGrad(const OpView& op) {
  const Var* out = op.in("Out");
  if (auto e = requireFloat(op, "Out", out)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", op.out("X@GRAD"), "Out", out)) return e;
  if (!known(out)) return std::nullopt;
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), out->shape, "Out's shape")) return e;
  return requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), out->shape, "Out's shape");
}

}  // namespace

void addAmpOps(std::vector<OpDef>& d) {
  constexpr uint32_t kPointwise = trait::Elementwise | trait::Recomputable;
  // cast's gradient is a cast back (Paddle's legacy backward writes a `cast`; PIR's cast_grad is one).
  d.push_back({.name = "cast", .spellings = {legacyName("cast"), pirName("pd_op.cast"), pirName("pd_op.cast_", true)},
               .inputs = {{"X", {}, 0, true}}, .outputs = {{"Out", {}, 0, true}},
               .attrs = {{"out_dtype", AttrKind::DType, "dtype"}, {"in_dtype", AttrKind::DType}}, .traits = kPointwise,
               .rule = ruleCast, .cost = {1, "Out"}, .grad = "cast"});
  // X and Out are lists of tensors (PIR: Tensor[] vectors, builtin.combine / builtin.split around
  // the op), Out[i] X[i] in place.
  OperandDef xs{"X", {}, 0, true}, outs{"Out", {}, 0, true};
  xs.vector = outs.vector = true;
  outs.parts_of = "X";
  // Out[i] = X[i] / Scale; FoundInfinite when any X holds a NaN or an inf.
  d.push_back({.name = "check_finite_and_unscale", .spellings = {legacyName("check_finite_and_unscale"), pirName("pd_op.check_finite_and_unscale_", true)},
               .inputs = {xs, {"Scale", {}, 1, true}}, .outputs = {outs, {"FoundInfinite", {}, 1, true}},
               .traits = trait::InPlace, .rule = ruleCheckFinite, .cost = {2, "X", true}});
  // Dynamic loss scaling: zeroes Out when FoundInfinite, and grows or shrinks the scale by the
  // good / bad step counters (Paddle's update_loss_scaling). stop_update is a PIR operand.
  d.push_back({.name = "update_loss_scaling", .spellings = {legacyName("update_loss_scaling"), pirName("pd_op.update_loss_scaling_", true)},
               .inputs = {xs, {"FoundInfinite", {}, 1, true}, {"PrevLossScaling", {}, 2, true},
                          {"InGoodSteps", {}, 3, true}, {"InBadSteps", {}, 4, true}, {"StopUpdate"}},
               .outputs = {outs, {"LossScaling", {}, 1, true}, {"OutGoodSteps", {}, 2, true}, {"OutBadSteps", {}, 3, true}},
               .attrs = {{"incr_every_n_steps", AttrKind::Int}, {"decr_every_n_nan_or_inf", AttrKind::Int},
                         {"incr_ratio", AttrKind::Float}, {"decr_ratio", AttrKind::Float}, {"stop_update", AttrKind::Bool, {}, 5}},
               .traits = trait::InPlace, .rule = ruleUpdateLossScaling, .cost = {1, "X", true}});
  d.push_back({.name = "squared_l2_norm", .spellings = {legacyName("squared_l2_norm"), pirName("pd_op.squared_l2_norm")},
               .inputs = {{"X", {}, 0, true}}, .outputs = {{"Out", {}, 0, true}}, .traits = trait::Recomputable,
               .rule = ruleSquaredL2Norm, .cost = {2, "X", true}, .grad = "squared_l2_norm_grad"});
  d.push_back({.name = "squared_l2_norm_grad", .spellings = {legacyName("squared_l2_norm_grad"), pirName("pd_op.squared_l2_norm_grad")},
               .inputs = {{"X", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .traits = trait::Grad, .rule = ruleSquaredL2NormGrad, .cost = {2, "X@GRAD"}});
  d.push_back({.name = "sqrt", .spellings = {legacyName("sqrt"), pirName("pd_op.sqrt"), pirName("pd_op.sqrt_", true)},
               .inputs = {{"X", {}, 0, true}}, .outputs = {{"Out", {}, 0, true}}, .traits = kPointwise, .rule = ruleLikeX,
               .cost = {1, "Out"}, .grad = "sqrt_grad"});
  d.push_back({.name = "sqrt_grad", .spellings = {legacyName("sqrt_grad"), pirName("pd_op.sqrt_grad")},
               .inputs = {{"Out", {}, 0, true}, {"Out@GRAD", {}, 1, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .traits = trait::Grad, .rule = ruleSqrtGrad, .cost = {2, "X@GRAD"}});
  // Out = X * max_norm / ||X|| when ||X|| > max_norm, else X.
  d.push_back({.name = "clip_by_norm", .spellings = {legacyName("clip_by_norm"), pirName("pd_op.clip_by_norm")},
               .inputs = {{"X", {}, 0, true}}, .outputs = {{"Out", {}, 0, true}}, .attrs = {{"max_norm", AttrKind::Float}},
               .traits = trait::Recomputable, .rule = ruleLikeX, .cost = {3, "X", true}});
}

}  // namespace spopt::ops
