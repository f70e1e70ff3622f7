#include "analysis/dynamic_dims.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ops/op_view.h"
#include "ops/shape_math.h"

namespace spopt {

namespace {

// Paddle writes a dynamic dim multiplied by known ones as their negated product (layer_norm's
// Mean of a [-1, 512, 768] X is [-512]); the importer keeps that under the var's "paddle" key
// ({"dims": [-512]}) while the shape says -1. The factor of each dim: 512 there, else 1.
std::vector<int64_t> dynamicFactors(const Var& var) {
  std::vector<int64_t> factors(var.shape.size(), 1);
  for (const Field& f : var.fields) {
    if (f.known() || f.key != "paddle") continue;
    auto paddle = nlohmann::json::parse(f.raw, nullptr, false);
    if (!paddle.is_object() || !paddle.contains("dims") || !paddle["dims"].is_array()) break;
    const auto& dims = paddle["dims"];
    if (dims.size() != var.shape.size()) break;
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i].is_number_integer() && dims[i].get<int64_t>() < -1) factors[i] = -dims[i].get<int64_t>();
  }
  return factors;
}

// Shapes an op's dynamic result Out may have instead (Paddle flattens [-1, 512] to [-1], which is
// 512 N, not N): reshape's target resolved against X; an elementwise result the largest of its
// same-rank inputs, dim by dim.
std::vector<ShapeDims> candidates(const OpView& view, const Var& out) {
  std::vector<ShapeDims> c;
  if (view.out("Out") != &out) return c;
  if (const Var* x = view.in("X"); x && view.attrs.has("shape") && !view.in("Shape")) {
    if (auto shape = view.attrs.getIntArray("shape"))
      if (auto target = resolveReshape(x->shape, *shape, nullptr)) c.push_back(*target);
  }
  ShapeDims widest = out.shape;
  bool any = false;
  for (const char* slot : {"X", "Y"})
    for (size_t i = 0, n = view.inputCount(slot); i < n; ++i)
      if (const Var* v = view.in(slot, i); v && v->shape.size() == out.shape.size()) {
        for (size_t d = 0; d < widest.size(); ++d) widest[d] = any ? std::max(widest[d], v->shape[d]) : v->shape[d];
        any = true;
      }
  if (any) c.push_back(widest);
  return c;
}

// Which dims of each var (by Var::id) were dynamic; empty: none.
using DynamicDims = std::vector<std::vector<char>>;

// The rule's own answer: while it rejects the dims of one of `rest` and says which it wants
// (requireDims), that var takes them, where they differ from its dims in dynamic positions only
// (a stride-2 convolution's [N, C, H/2, W/2], an upsampling's [N, C, 2H, 2W]). Whether the rule
// then holds; on false the caller puts the shapes back.
bool followRule(const OpView& view, OpRuleFn rule, const std::vector<Var*>& rest, const DynamicDims& dynamic) {
  for (size_t step = 0; step <= rest.size(); ++step) {
    auto e = rule(view);
    if (!e) return true;
    auto it = std::find(rest.begin(), rest.end(), e->result);
    if (it == rest.end() || e->wanted.size() != (*it)->shape.size()) return false;
    Var* v = *it;
    for (size_t d = 0; d < v->shape.size(); ++d)
      if (v->shape[d] != e->wanted[d] && (!dynamic[v->id][d] || e->wanted[d] < 1)) return false;
    v->shape = e->wanted;
  }
  return !rule(view);
}

// Re-sizes the dynamic results of `op`: a gradient S@GRAD takes its input S's shape (Paddle's
// rule for every grad op). When the op's rule rejects the others as sized, they take, together,
// the first of: their reshape / elementwise candidates, or their dynamic dims divided by k = 2..8
// (split parts along the batch), that the rule accepts.
void fitOutputs(const Op& op, const DynamicDims& dynamic) {
  OpView view(op);
  if (!view.known()) return;
  std::vector<Var*> rest;
  for (const Slot& slot : op.outputs) {
    const OperandDef* o = view.outputOfSlot(slot.name);
    if (!o) continue;
    std::string_view name = o->name;
    for (const Arg& a : slot.args) {
      Var* v = a.var;
      if (!v || v->id >= dynamic.size() || dynamic[v->id].empty()) continue;
      if (name.ends_with("@GRAD"))
        if (const Var* fwd = view.in(name.substr(0, name.size() - 5)); fwd && fwd->shape.size() == v->shape.size()) {
          v->shape = fwd->shape;
          continue;
        }
      rest.push_back(v);
    }
  }
  auto rule = view.def()->rule;
  if (rest.empty() || !rule || !rule(view)) return;
  std::vector<ShapeDims> sized;
  for (Var* v : rest) sized.push_back(v->shape);
  if (followRule(view, rule, rest, dynamic)) return;
  for (size_t i = 0; i < rest.size(); ++i) rest[i]->shape = sized[i];
  auto tryShapes = [&](auto shapeOf) {
    for (size_t i = 0; i < rest.size(); ++i) rest[i]->shape = shapeOf(i);
    if (!rule(view)) return true;
    for (size_t i = 0; i < rest.size(); ++i) rest[i]->shape = sized[i];
    return false;
  };
  for (size_t c = 0; c < 2; ++c)
    if (tryShapes([&](size_t i) {
          std::vector<ShapeDims> cs = candidates(view, *rest[i]);
          return c < cs.size() ? cs[c] : sized[i];
        }))
      return;
  for (int64_t k = 2; k <= 8; ++k)
    if (tryShapes([&](size_t i) {
          ShapeDims s = sized[i];
          for (size_t d = 0; d < s.size(); ++d)
            if (dynamic[rest[i]->id][d] && s[d] % k == 0) s[d] /= k;
          return s;
        }))
      return;
}

}  // namespace

size_t sizeDynamicDims(Job& job, int64_t size) {
  size_t vars = 0;
  for (auto& program : job.programs) {
    DynamicDims dynamic(program->next_var_id);
    for (auto& block : program->blocks)
      for (auto& var : block->vars) {
        bool has = false;
        for (int64_t d : var->shape) has |= d == -1;
        if (!has) continue;
        std::vector<int64_t> factors = dynamicFactors(*var);
        std::vector<char> mask(var->shape.size(), 0);
        for (size_t i = 0; i < var->shape.size(); ++i)
          if (var->shape[i] == -1) var->shape[i] = size * factors[i], mask[i] = 1;
        if (var->id < dynamic.size()) dynamic[var->id] = std::move(mask);
        ++vars;
      }
    for (auto& block : program->blocks)
      for (const Op& op : block->ops) fitOutputs(op, dynamic);
  }
  return vars;
}

}  // namespace spopt
