#include "runtime/op_io.h"

#include "ops/vector_parts.h"

namespace spopt::rt {
namespace {

// Part i of a vector held as its parts one after another.
Tensor partOf(const Tensor& whole, const std::vector<std::vector<int64_t>>& parts, size_t i) {
  int64_t offset = 0;
  for (size_t j = 0; j < i; ++j) offset += Tensor::shapeOnly(whole.dtype(), parts[j]).numel();
  return whole.window(offset, parts[i]);
}

}  // namespace

std::vector<int64_t> replayShape(const Op& op, const Var& v) {
  OpView view(op);
  bool vector = false;
  if (view.def() && view.dialect() == Dialect::Pir)
    for (const OperandDef& o : view.def()->outputs) vector |= o.vector && view.out(o.name) == &v;
  auto parts = vector ? vectorPartShapes(v) : std::nullopt;
  if (!parts) return v.shape;
  int64_t total = 0;
  for (const auto& p : *parts) total += Tensor::shapeOnly(v.dtype, p).numel();
  return {total};
}

const Tensor* OpTensorsIO::input(std::string_view slot, size_t i) const {
  if (const Var* vec = vectorIn(slot)) {  // a PIR vector: its parts are the slot's values
    const Tensor* t = in_(*vec);
    if (!t || t->empty()) return nullptr;
    if (auto parts = vectorPartShapes(*vec)) {
      if (i >= parts->size()) return nullptr;
      shape_only_.push_back(partOf(*t, *parts, i));
      return &shape_only_.back();
    }
    if (t->shape().empty() || int64_t(i) >= t->shape()[0]) return nullptr;
    shape_only_.push_back(t->part(int64_t(i)));
    return &shape_only_.back();
  }
  const Var* var = op_.in(slot, i);
  if (!var) return nullptr;
  // A slot whose buffer the kernel does not read (the catalogue's no-need-buffer operands) gets
  // its shape and dtype only, never the live tensor: its var may be released by another stream.
  if (const OperandDef* o = op_.def() ? op_.def()->input(slot) : nullptr; o && !o->reads_buffer) {
    shape_only_.push_back(Tensor::shapeOnly(var->dtype, var->shape));
    return &shape_only_.back();
  }
  const Tensor* t = in_(*var);
  return !t || t->empty() ? nullptr : t;
}

size_t OpTensorsIO::inputCount(std::string_view slot) const {
  if (const Var* vec = vectorIn(slot)) return vec->shape.empty() ? 0 : size_t(vec->shape[0]);
  return op_.inputCount(slot);
}

Tensor* OpTensorsIO::output(std::string_view slot, size_t i) {
  if (auto parts = vectorOut(slot)) {  // a PIR vector result: its parts, in the buffer replayShape gave
    Tensor* whole = find(op_.out(slot));
    if (!whole || i >= parts->size()) return nullptr;
    shape_only_.push_back(partOf(*whole, *parts, i));
    return &shape_only_.back();
  }
  return find(op_.out(slot, i));
}

size_t OpTensorsIO::outputCount(std::string_view slot) const {
  if (auto parts = vectorOut(slot)) return parts->size();
  return op_.outputCount(slot);
}

// The vector a PIR op reads in `slot` (what a VectorResult op wrote), unless the op indexes it
// itself (builtin.slice).
const Var* OpTensorsIO::vectorIn(std::string_view slot) const {
  if (op_.dialect() != Dialect::Pir || op_.inputCount(slot) != 1 || op_.has(trait::View)) return nullptr;
  const Var* v = op_.in(slot);
  return v && isVectorValue(*v) ? v : nullptr;
}

// The part shapes of the vector result in `slot`, when it is one whose parts the program says.
std::optional<std::vector<std::vector<int64_t>>> OpTensorsIO::vectorOut(std::string_view slot) const {
  const OperandDef* o = op_.def() ? op_.def()->output(slot) : nullptr;
  const Var* v = o && o->vector && op_.dialect() == Dialect::Pir && op_.outputCount(slot) == 1 ? op_.out(slot) : nullptr;
  return v ? vectorPartShapes(*v) : std::nullopt;
}

Tensor* OpTensorsIO::find(const Var* var) {
  for (auto& [v, t] : outs_)
    if (var && v == var) return &t;
  return nullptr;
}

bool touchesVector(const OpView& op) {
  if (op.dialect() != Dialect::Pir || !op.def()) return false;
  if (op.has(trait::VectorResult)) return true;
  for (const OperandDef& o : op.def()->outputs)
    if (o.vector && op.out(o.name)) return true;
  for (const Slot& s : op.op().inputs)
    for (const Arg& a : s.args)
      if (a.var && isVectorValue(*a.var) && !op.has(trait::View)) return true;
  return false;
}

}  // namespace spopt::rt
