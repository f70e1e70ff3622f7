// Constants, copies, scheduling ops, the optimizer update and the ops that bring values into and
// out of a program: definitions and their rules.
#include <cstdlib>

#include "ir/json_text.h"
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

// nop: no outputs, or one Out per X; depend: Out = X.
Result ruleNop(const OpView& op) {
  size_t n_out = op.outputCount("Out"), n_in = op.inputCount("X");
  if (n_out && n_out != n_in) return fail(op, "/outputs/Out", "has " + std::to_string(n_out) + " Out but " + std::to_string(n_in) + " X");
  for (size_t i = 0; i < n_out; ++i)
    if (const Var *x = op.input("X")->args[i].var, *o = op.output("Out")->args[i].var; known(x) && known(o) && x->shape != o->shape)
      return fail(op, "/outputs/Out/" + std::to_string(i), "Out " + dimsText(o->shape) + " should be " + dimsText(x->shape) + " (X's shape)");
  return std::nullopt;
}

// full / fill_constant (runtime/kernels/misc.cpp): a dtype attribute (name or Paddle code) stored
// like Out; a shape attribute, unless a ShapeTensor gives it, matching Out ([] and [1] both hold
// one value); a non-empty str_value that is a number; a ValueTensor of one element.
Result ruleFull(const OpView& op) {
  const Var* out = op.out("Out");
  if (!out) return std::nullopt;
  if (const std::string_view* raw = op.attrs.find("dtype")) {
    std::optional<DType> t;
    if (rawIsString(*raw)) {
      std::string name = rawToString(*raw).value_or("");
      std::string_view n = name;
      if (n.substr(0, 7) == "paddle.") n.remove_prefix(7);
      t = parseDType(n);
      if (!t) return fail(op, "/attrs/dtype", "dtype \"" + name + "\" is not a known dtype");
    } else if (auto code = intAttr(op, "dtype", 5)) {
      t = dtypeFromPaddleCode(*code);
      if (!t) return fail(op, "/attrs/dtype", "dtype " + std::to_string(*code) + " is not a supported Paddle dtype code");
    }
    if (t && dtypeStorage(*t) != dtypeStorage(out->dtype))
      return fail(op, "/attrs/dtype", "dtype attribute " + std::string(dtypeName(*t)) + " disagrees with Out's " + std::string(dtypeName(out->dtype)));
  }
  bool shape_from_input = hasArg(op.input("ShapeTensor")) || op.inputCount("ShapeTensorList") > 0;
  if (!shape_from_input && op.attrs.has("shape") && known(out)) {
    auto shape = intsAttr(op, "shape", {});
    if (shape && out->shape != *shape && !(shape->empty() && out->numel() == 1) && !(out->shape.empty() && *shape == ShapeDims{1}))
      return fail(op, "/outputs/Out/0", "Out " + dimsText(out->shape) + " should be " + dimsText(*shape) + " (the shape attribute)");
  }
  std::string str;
  if (const std::string_view* raw = op.attrs.find("str_value")) str = rawToNumber(*raw) ? std::string(*raw) : rawToString(*raw).value_or("");
  if (!str.empty()) {
    char* end = nullptr;
    std::strtod(str.c_str(), &end);
    if (end == str.c_str() || *end) return fail(op, "/attrs/str_value", "str_value \"" + str + "\" is not a number");
  } else if (const Var* vt = op.in("ValueTensor"); known(vt) && vt->numel() != 1) {
    return fail(op, "/inputs/ValueTensor/0", "ValueTensor " + dimsText(vt->shape) + " should hold one element");
  }
  return std::nullopt;
}

// assign: Out is X's copy (same storage and shape).
Result ruleAssign(const OpView& op) {
  const Var* x = op.in("X");
  if (known(x))
    if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape")) return e;
  return requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x);
}

Result ruleSgd(const OpView& op) {
  const Var* param = op.in("Param");
  if (auto e = requireFloat(op, "Param", param)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Grad", op.in("Grad"), "Param", param)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "ParamOut", op.out("ParamOut"), "Param", param)) return e;
  if (known(param)) {
    if (auto e = requireDims(op, "/inputs", "Grad", op.in("Grad"), param->shape, "Param's shape")) return e;
    if (auto e = requireDims(op, "/outputs", "ParamOut", op.out("ParamOut"), param->shape, "Param's shape")) return e;
  }
  const Var* lr = op.in("LearningRate");
  if (known(lr) && lr->numel() != 1)
    return fail(op, "/inputs/LearningRate/0", "LearningRate " + dimsText(lr->shape) + " should hold one element");
  return std::nullopt;
}

// coalesce_tensor: one Output per Input, shaped like it; FusedOutput stored like them.
Result ruleCoalesce(const OpView& op) {
  size_t n_out = op.outputCount("Output"), n_in = op.inputCount("Input");
  if (n_out != n_in) return fail(op, "/outputs/Output", "has " + std::to_string(n_out) + " Output but " + std::to_string(n_in) + " Input");
  for (size_t i = 0; i < n_out; ++i) {
    const Var *in = op.input("Input")->args[i].var, *out = op.output("Output")->args[i].var;
    std::string where = "/outputs/Output/" + std::to_string(i);
    if (auto e = requireSameStorage(op, "/outputs", "Output", out, "Input", in)) {
      e->where = where;
      return e;
    }
    if (known(in) && known(out) && in->shape != out->shape)
      return fail(op, where, "Output " + dimsText(out->shape) + " should be " + dimsText(in->shape) + " (its Input's shape)");
  }
  return std::nullopt;
}

}  // namespace

void addMiscOps(std::vector<OpDef>& d) {
  constexpr uint32_t kMove = trait::MovesOnly | trait::Recomputable;
  d.push_back({.name = "full", .spellings = {legacyName("fill_constant"), pirName("pd_op.full")},
               .inputs = {{"ValueTensor"}, {"ShapeTensor"}, {"ShapeTensorList"}}, .outputs = {{"Out", {}, 0, true}},
               .attrs = {{"shape", AttrKind::Ints}, {"value", AttrKind::Float}},
               .traits = kMove | trait::Constant, .rule = ruleFull});
  d.push_back({.name = "full_int_array", .spellings = {pirName("pd_op.full_int_array")}, .outputs = {{"Out", {}, 0, true}},
               .attrs = {{"value", AttrKind::Ints}}, .traits = kMove | trait::Constant});
  d.push_back({.name = "assign", .spellings = {legacyName("assign"), pirName("pd_op.assign"), pirName("pd_op.assign_", true)},
               .inputs = {{"X", {}, 0, true}}, .outputs = {{"Out", {}, 0, true}}, .traits = kMove, .rule = ruleAssign});
  // Scheduling ops: Out aliases X; depend's Dep only orders.
  d.push_back({.name = "depend", .spellings = {legacyName("depend"), pirName("pd_op.depend")},
               .inputs = {{"X", {}, 0, true}, {"Dep", {}, 1, false, false}}, .outputs = {{"Out", {}, 0, true}},
               .traits = kMove | trait::View, .rule = ruleNop});
  d.push_back({.name = "nop", .spellings = {legacyName("nop")}, .inputs = {{"X"}}, .outputs = {{"Out"}},
               .traits = kMove | trait::View, .rule = ruleNop});
  // Stream synchronisation (Paddle waits for the compute or the communication stream): Out is X.
  // Replay orders ops by their data (runtime/stream_plan.h), so it is a copy there.
  d.push_back({.name = "c_sync_calc_stream", .spellings = {legacyName("c_sync_calc_stream")}, .inputs = {{"X"}}, .outputs = {{"Out"}},
               .traits = kMove | trait::View, .rule = ruleNop});
  d.push_back({.name = "c_sync_comm_stream", .spellings = {legacyName("c_sync_comm_stream")}, .inputs = {{"X"}}, .outputs = {{"Out"}},
               .attrs = {{"ring_id", AttrKind::Int}}, .traits = kMove | trait::View, .rule = ruleNop});
  // Output[i] are views of consecutive slices of FusedOutput in Paddle (one buffer for the
  // gradients a fused all-reduce sums); copy_data fills them from Input, set_constant with
  // `constant`. Replay keeps the views in step by copying (runtime/fused_views.h).
  d.push_back({.name = "coalesce_tensor", .spellings = {legacyName("coalesce_tensor"), pirName("pd_op.coalesce_tensor")},
               .inputs = {{"Input", {}, 0, true}}, .outputs = {{.name = "Output", .pir = 0, .required = true, .view_of = "FusedOutput"}, {"FusedOutput", {}, 1, true}},
               .attrs = {{"copy_data", AttrKind::Bool}, {"set_constant", AttrKind::Bool}, {"constant", AttrKind::Float},
                         {"dtype", AttrKind::Int}, {"use_align", AttrKind::Bool}, {"align_size", AttrKind::Int}},
               .traits = trait::MovesOnly, .rule = ruleCoalesce, .cost = {1, "Input", true}});
  d.push_back({.name = "sgd", .spellings = {legacyName("sgd"), pirName("pd_op.sgd_", true)},
               .inputs = {{"Param", {}, 0, true}, {"LearningRate", {}, 1, true}, {"Grad", {}, 2, true}, {"MasterParam", {}, 3}},
               .outputs = {{"ParamOut", {}, 0, true}, {"MasterParamOut", {}, 1}}, .traits = trait::InPlace | trait::Threaded,
               .rule = ruleSgd, .cost = {2, "Param", true}});
  // Values that enter a program: replay feeds them (from --seed or --inputs), never computes them.
  constexpr uint32_t kEntry = trait::Source | trait::SideEffects | trait::MovesOnly;
  d.push_back({.name = "data", .spellings = {pirName("pd_op.data")}, .outputs = {{"Out", {}, 0, true}}, .traits = kEntry});
  d.push_back({.name = "parameter", .spellings = {pirName("builtin.parameter")}, .outputs = {{"Out", {}, 0, true}}, .traits = kEntry});
  d.push_back({.name = "feed", .spellings = {legacyName("feed"), pirName("pd_op.feed")}, .inputs = {{"X"}},
               .outputs = {{"Out", {}, 0, true}}, .traits = kEntry});
  // A py_reader pipeline: the reader objects carry no tensor; `read` hands out the next batch,
  // which replay feeds as it feeds any program input.
  d.push_back({.name = "create_py_reader", .spellings = {legacyName("create_py_reader")},
               .inputs = {{"blocking_queue", {}, -1, true, false}}, .outputs = {{"Out", {}, -1, true}},
               .traits = trait::SideEffects | trait::MovesOnly});
  d.push_back({.name = "create_double_buffer_reader", .spellings = {legacyName("create_double_buffer_reader")},
               .inputs = {{"UnderlyingReader", {}, -1, true, false}}, .outputs = {{"Out", {}, -1, true}},
               .traits = trait::SideEffects | trait::MovesOnly});
  d.push_back({.name = "read", .spellings = {legacyName("read")}, .inputs = {{"Reader", {}, -1, true, false}},
               .outputs = {{"Out", {}, -1, true}}, .traits = kEntry});
  d.push_back({.name = "fetch", .spellings = {legacyName("fetch"), pirName("pd_op.fetch")}, .inputs = {{"X", {}, 0, true}},
               .outputs = {{"Out", {}, 0}}, .traits = trait::Sink | trait::SideEffects | trait::MovesOnly});
}

}  // namespace spopt::ops
