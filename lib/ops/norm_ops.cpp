// layer_norm and dropout: definitions and their rules.
#include "ir/json_text.h"
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

Result checkLayerNorm(const OpView& op, bool grad) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (!grad)
    if (auto e = requireSameStorage(op, "/outputs", "Y", op.out("Y"), "X", x)) return e;
  if (!known(x) || x->shape.empty()) return std::nullopt;
  auto axis = intAttr(op, "begin_norm_axis", 1);
  int64_t r = int64_t(x->shape.size());
  if (axis && (*axis < -r || *axis > r))
    return fail(op, "/attrs/begin_norm_axis", "begin_norm_axis " + std::to_string(*axis) + " is out of range for X " + dimsText(x->shape));
  if (auto e = requireDims(op, "/outputs", "Y", op.out("Y"), x->shape, "X's shape")) return e;
  if (!axis) return std::nullopt;
  // Scale and Bias hold one value per normalised element, Mean and Variance one per row.
  size_t begin = size_t(*axis < 0 ? *axis + r : *axis);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < x->shape.size(); ++d) (d < begin ? rows : cols) *= x->shape[d];
  auto count = [&](std::string_view dir, std::string_view slot, const Var* v, int64_t n, const char* what) -> Result {
    if (!known(v) || v->numel() == n) return std::nullopt;
    return fail(op, std::string(dir) + "/" + std::string(slot) + "/0",
                std::string(slot) + " " + dimsText(v->shape) + " should hold " + std::to_string(n) + " values (" + what + ")");
  };
  if (auto e = count("/inputs", "Scale", op.in("Scale"), cols, "the normalised dims of X")) return e;
  if (!grad) return count("/inputs", "Bias", op.in("Bias"), cols, "the normalised dims of X");
  if (auto e = requireDims(op, "/inputs", "Y@GRAD", op.in("Y@GRAD"), x->shape, "X's shape")) return e;
  if (auto e = count("/inputs", "Mean", op.in("Mean"), rows, "the leading dims of X")) return e;
  if (auto e = count("/inputs", "Variance", op.in("Variance"), rows, "the leading dims of X")) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", op.out("X@GRAD"), "X", x)) return e;
  if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape")) return e;
  if (auto e = count("/outputs", "Scale@GRAD", op.out("Scale@GRAD"), cols, "the normalised dims of X")) return e;
  return count("/outputs", "Bias@GRAD", op.out("Bias@GRAD"), cols, "the normalised dims of X");
}
Result ruleLayerNorm(const OpView& op) { return checkLayerNorm(op, false); }
Result ruleLayerNormGrad(const OpView& op) { return checkLayerNorm(op, true); }

Result checkDropout(const OpView& op, bool grad) {
  auto is_test = boolAttr(op, "is_test", false);
  if (grad && is_test && !*is_test && !hasArg(op.input("Mask"))) return fail(op, "/inputs", "missing input Mask");
  const char* in_slot = grad ? "Out@GRAD" : "X";
  const char* out_slot = grad ? "X@GRAD" : "Out";
  const Var* x = op.in(in_slot);
  if (auto e = requireFloat(op, in_slot, x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", out_slot, op.out(out_slot), in_slot, x)) return e;
  const Var* m = grad ? op.in("Mask") : op.out("Mask");
  const char* mask_dir = grad ? "/inputs" : "/outputs";
  if (m && dtypeStorage(m->dtype) != DTypeStorage::U8)
    return fail(op, std::string(mask_dir) + "/Mask/0", "Mask is " + std::string(dtypeName(m->dtype)) + ", not uint8 or bool");
  if (known(x)) {
    const char* why = grad ? "Out@GRAD's shape" : "X's shape";
    if (auto e = requireDims(op, "/outputs", out_slot, op.out(out_slot), x->shape, why)) return e;
    if (auto e = requireDims(op, mask_dir, "Mask", m, x->shape, why)) return e;
  }
  if (const std::string_view* raw = op.attrs.find("dropout_prob")) {
    auto p = rawToNumber(*raw);
    if (p && !(*p >= 0.0 && *p <= 1.0)) return fail(op, "/attrs/dropout_prob", "dropout_prob " + std::to_string(*p) + " is outside [0, 1]");
  }
  if (const std::string_view* raw = op.attrs.find("dropout_implementation")) {
    auto impl = rawToString(*raw);
    if (impl && *impl != "downgrade_in_infer" && *impl != "upscale_in_train")
      return fail(op, "/attrs/dropout_implementation",
                  "dropout_implementation \"" + *impl + "\" is neither downgrade_in_infer nor upscale_in_train");
  }
  return std::nullopt;
}
Result ruleDropout(const OpView& op) { return checkDropout(op, false); }
// The kernel's mask is a function of (replay seed, the op's seed, the Mask var's name, rank,
// element index); with fix_seed the name is left out, so a copy writing a fresh Mask draws the
// same mask (runtime/kernels/dropout.cpp). In test mode nothing is drawn.
bool dropoutCopyDrawsSame(const OpView& op) {
  return op.attrs.getBool("fix_seed").value_or(false) || op.attrs.getBool("is_test").value_or(false);
}
Result ruleDropoutGrad(const OpView& op) { return checkDropout(op, true); }

}  // namespace

void addNormOps(std::vector<OpDef>& d) {
  std::vector<AttrDef> norm_attrs = {{"begin_norm_axis", AttrKind::Int}, {"epsilon", AttrKind::Float}};
  d.push_back({.name = "layer_norm", .spellings = {legacyName("layer_norm"), pirName("pd_op.layer_norm")},
               .inputs = {{"X", {}, 0, true}, {"Scale", {}, 1}, {"Bias", {}, 2}},
               .outputs = {{"Y", {}, 0, true}, {"Mean", {}, 1}, {"Variance", {}, 2}}, .attrs = norm_attrs,
               .traits = trait::Recomputable, .rule = ruleLayerNorm, .cost = {8, "Y"}, .grad = "layer_norm_grad"});
  // The gradient does not depend on Bias: the kernel never reads it (norm.cpp, layerNormGrad).
  d.push_back({.name = "layer_norm_grad", .spellings = {legacyName("layer_norm_grad"), pirName("pd_op.layer_norm_grad")},
               .inputs = {{"X", {}, 0, true}, {"Scale", {}, 1}, {"Bias", {}, 2, false, false}, {"Mean", {}, 3, true},
                          {"Variance", {}, 4, true}, {"Y@GRAD", {}, 5, true}},
               .outputs = {{"X@GRAD", {}, 0}, {"Scale@GRAD", {}, 1}, {"Bias@GRAD", {}, 2}}, .attrs = norm_attrs,
               .traits = trait::Grad, .rule = ruleLayerNormGrad, .cost = {12, "X", true}});
  // PIR passes the probability as a Scalar operand and calls the implementation `mode`. The mask
  // is a function of (seed, rank, element): a recompute draws the same one.
  std::vector<AttrDef> drop_attrs = {{"dropout_prob", AttrKind::Float, {}, 2}, {"is_test", AttrKind::Bool},
                                     {"seed", AttrKind::Int}, {"dropout_implementation", AttrKind::String, "mode"},
                                     {"fix_seed", AttrKind::Bool}};
  d.push_back({.name = "dropout", .spellings = {legacyName("dropout"), pirName("pd_op.dropout")},
               .inputs = {{"X", {}, 0, true}, {"Seed", {}, 1}}, .outputs = {{"Out", {}, 0, true}, {"Mask", {}, 1}},
               .attrs = drop_attrs, .traits = trait::Random | trait::Recomputable | trait::Elementwise, .rule = ruleDropout,
               .cost = {2, "Out"}, .grad = "dropout_grad", .copy_draws_same = dropoutCopyDrawsSame});
  d.push_back({.name = "dropout_grad", .spellings = {legacyName("dropout_grad"), pirName("pd_op.dropout_grad")},
               .inputs = {{"Mask", {}, 0}, {"Out@GRAD", {}, 1, true}}, .outputs = {{"X@GRAD", {}, 0, true}},
               .attrs = drop_attrs, .traits = trait::Grad, .rule = ruleDropoutGrad, .cost = {2, "X@GRAD"}});
}

}  // namespace spopt::ops
