#include "ops/vector_parts.h"

#include "ops/op_view.h"

namespace spopt {
namespace {

std::optional<std::vector<std::vector<int64_t>>> partShapes(const Var& vec, int depth) {
  if (vec.writers.size() != 1 || depth > 64) return std::nullopt;  // a chain of in-place vector ops is short
  const Op& w = *vec.writers.front();
  OpView view(w);
  if (view.is(opDef("combine"))) {
    std::vector<std::vector<int64_t>> parts;
    for (const Slot& s : w.inputs)
      for (const Arg& a : s.args) {
        if (!a.var) return std::nullopt;
        parts.push_back(a.var->shape);
      }
    return parts;
  }
  if (!view.def()) return std::nullopt;
  for (const OperandDef& o : view.def()->outputs) {
    if (o.parts_of.empty() || view.out(o.name) != &vec) continue;
    const Var* in = view.in(o.parts_of);
    return in ? partShapes(*in, depth + 1) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

bool isVectorValue(const Var& v) {
  if (v.writers.size() != 1) return false;
  OpView w(*v.writers.front());
  if (!w.def() || w.dialect() != Dialect::Pir) return false;
  if (w.has(trait::VectorResult)) return true;
  for (const OperandDef& o : w.def()->outputs)
    if (o.vector && w.out(o.name) == &v) return true;
  return false;
}

std::optional<std::vector<std::vector<int64_t>>> vectorPartShapes(const Var& vec) { return partShapes(vec, 0); }

}  // namespace spopt
