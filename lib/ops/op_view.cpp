#include "ops/op_view.h"

#include "ir/json_text.h"

namespace spopt {

namespace {

// Ops the catalogue does not know still have a dialect: PIR's names carry a dialect prefix.
Dialect dialectOfType(std::string_view t) {
  return t.starts_with("pd_op.") || t.starts_with("builtin.") || t.starts_with("cf.") || t.starts_with("dist.")
             ? Dialect::Pir
             : Dialect::Legacy;
}

const OperandDef* findOperand(const std::vector<OperandDef>& list, std::string_view canonical) {
  for (const OperandDef& o : list)
    if (o.name == canonical) return &o;
  return nullptr;
}

const OperandDef* operandOfSlot(const std::vector<OperandDef>& list, std::string_view slot, Dialect d, bool input) {
  for (const OperandDef& o : list)
    if (slotName(o, d, input) == slot) return &o;
  return nullptr;
}

}  // namespace

OpView::OpView(const Op& op) : OpView(op, resolveOp(op.type)) {}

OpView::OpView(const Op& op, ResolvedOp r) : type(op.type), attrs(*this), op_(op), r_(r) {
  dialect_ = r.spelling ? r.spelling->dialect : dialectOfType(op.type);
}

std::string_view OpView::inSlot(std::string_view canonical) const {
  if (dialect_ == Dialect::Legacy) return canonical;  // canonical names are legacy's
  const OperandDef* o = r_.def ? findOperand(r_.def->inputs, canonical) : nullptr;
  return o ? slotName(*o, dialect_, true) : canonical;
}

std::string_view OpView::outSlot(std::string_view canonical) const {
  if (dialect_ == Dialect::Legacy) return canonical;
  const OperandDef* o = r_.def ? findOperand(r_.def->outputs, canonical) : nullptr;
  return o ? slotName(*o, dialect_, false) : canonical;
}

const Slot* OpView::input(std::string_view canonical) const { return op_.input(inSlot(canonical)); }
const Slot* OpView::output(std::string_view canonical) const { return op_.output(outSlot(canonical)); }
Var* OpView::in(std::string_view canonical, size_t i) const { return op_.in(inSlot(canonical), i); }
Var* OpView::out(std::string_view canonical, size_t i) const { return op_.out(outSlot(canonical), i); }
size_t OpView::inputCount(std::string_view canonical) const { return op_.inputCount(inSlot(canonical)); }
size_t OpView::outputCount(std::string_view canonical) const { return op_.outputCount(outSlot(canonical)); }

const OperandDef* OpView::inputOfSlot(std::string_view slot) const {
  return r_.def ? operandOfSlot(r_.def->inputs, slot, dialect_, true) : nullptr;
}
const OperandDef* OpView::outputOfSlot(std::string_view slot) const {
  return r_.def ? operandOfSlot(r_.def->outputs, slot, dialect_, false) : nullptr;
}

// Where a canonical attribute lives: the op's own attrs under `key`, or (PIR) the `value` of the
// constant op that defines operand in<i>. `read(object, key)` reads it: a stable pointer
// (JsonObject::find) or, without splitting the object, its text (JsonObject::raw).
template <class Read>
auto OpView::lookupAttr(std::string_view canonical, Read read) const -> decltype(read(std::declval<const JsonObject&>(), canonical)) {
  const AttrDef* a = r_.def ? r_.def->attr(canonical) : nullptr;
  if (!a || dialect_ != Dialect::Pir) return read(op_.attrs, canonical);
  auto own = read(op_.attrs, a->pir_name.empty() ? a->name : a->pir_name);
  if (own || a->pir_operand < 0) return own;
  // A Scalar / IntArray passed as an operand (Paddle writes it either way): the value of the
  // constant op that defines it.
  const Var* v = op_.in("in" + std::to_string(a->pir_operand));
  if (!v || v->writers.size() != 1) return {};
  const Op& def = *v->writers.front();
  ResolvedOp r = resolveOp(def.type);
  if (!r || !r.def->has(trait::Constant)) return {};
  return read(def.attrs, "value");
}

const std::string_view* OpView::attrRaw(std::string_view canonical) const {
  return lookupAttr(canonical, [](const JsonObject& o, std::string_view key) { return o.find(key); });
}
std::optional<std::string_view> OpView::attrText(std::string_view canonical) const {
  return lookupAttr(canonical, [](const JsonObject& o, std::string_view key) { return o.raw(key); });
}

std::string OpView::pointer(std::string_view where) const {
  if (!r_.def || dialect_ == Dialect::Legacy) return std::string(where);
  auto mapSegment = [&](std::string_view prefix, bool input) -> std::optional<std::string> {
    if (!where.starts_with(prefix)) return std::nullopt;
    std::string_view rest = where.substr(prefix.size());
    size_t end = rest.find('/');
    std::string_view name = rest.substr(0, end);
    std::string mapped(input ? inSlot(name) : outSlot(name));
    return std::string(prefix) + mapped + std::string(end == std::string_view::npos ? "" : rest.substr(end));
  };
  if (auto m = mapSegment("/inputs/", true)) return *m;
  if (auto m = mapSegment("/outputs/", false)) return *m;
  if (where.starts_with("/attrs/") && dialect_ == Dialect::Pir) {
    if (const AttrDef* a = r_.def->attr(where.substr(7))) {
      std::string_view name = a->pir_name.empty() ? a->name : a->pir_name;
      if (a->pir_operand >= 0 && !op_.attrs.has(name)) return "/inputs/in" + std::to_string(a->pir_operand) + "/0";
      return "/attrs/" + std::string(name);
    }
  }
  return std::string(where);
}

const std::string_view* AttrAccess::find(std::string_view canonical) const { return v_.attrRaw(canonical); }
std::optional<std::string_view> AttrAccess::raw(std::string_view canonical) const { return v_.attrText(canonical); }

std::optional<int64_t> AttrAccess::getInt(std::string_view canonical) const {
  auto raw = this->raw(canonical);
  return raw ? rawToInt(*raw) : std::nullopt;
}
std::optional<double> AttrAccess::getNumber(std::string_view canonical) const {
  auto raw = this->raw(canonical);
  return raw ? rawToNumber(*raw) : std::nullopt;
}
std::optional<bool> AttrAccess::getBool(std::string_view canonical) const {
  auto raw = this->raw(canonical);
  return raw ? rawToBool(*raw) : std::nullopt;
}
std::optional<std::string> AttrAccess::getString(std::string_view canonical) const {
  auto raw = this->raw(canonical);
  return raw ? rawToString(*raw) : std::nullopt;
}
std::optional<std::vector<int64_t>> AttrAccess::getIntArray(std::string_view canonical) const {
  auto raw = this->raw(canonical);
  return raw ? rawToIntArray(*raw) : std::nullopt;
}

bool OpView::readsBuffer(std::string_view slot) const {
  const OperandDef* o = inputOfSlot(slot);
  return !o || o->reads_buffer;
}
bool readsBuffer(const Op& op, std::string_view slot) { return OpView(op).readsBuffer(slot); }

}  // namespace spopt
