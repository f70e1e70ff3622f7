#include "ops/rule_support.h"

#include "ir/json_text.h"

namespace spopt::ops {

bool known(const Var* v) {
  if (!v) return false;
  for (auto d : v->shape)
    if (d < 0) return false;
  return true;
}

Result fail(const OpView& op, std::string where, const std::string& message) {
  OpRuleError e;
  e.where = std::move(where);
  e.message = std::string(op.type) + ": " + message;
  return e;
}

std::optional<int64_t> intAttr(const OpView& op, std::string_view key, int64_t def) {
  auto raw = op.attrs.raw(key);
  return raw ? rawToIntLenient(*raw) : def;
}
std::optional<bool> boolAttr(const OpView& op, std::string_view key, bool def) {
  auto raw = op.attrs.raw(key);
  return raw ? rawToBoolLenient(*raw) : def;
}
std::optional<ShapeDims> intsAttr(const OpView& op, std::string_view key, ShapeDims def) {
  auto raw = op.attrs.raw(key);
  return raw ? rawToIntsLenient(*raw) : def;
}

Result requireDims(const OpView& op, std::string_view dir, std::string_view slot, const Var* v, const ShapeDims& want,
                   std::string_view why) {
  if (!known(v) || v->shape == want) return std::nullopt;
  Result e = fail(op, std::string(dir) + "/" + std::string(slot) + "/0",
                  std::string(slot) + " " + dimsText(v->shape) + " should be " + dimsText(want) + " (" + std::string(why) + ")");
  if (dir == "/outputs") {
    e->result = v;
    e->wanted = want;
  }
  return e;
}

Result requireSameStorage(const OpView& op, std::string_view dir, std::string_view a_slot, const Var* a,
                          std::string_view b_slot, const Var* b) {
  if (!a || !b || dtypeStorage(a->dtype) == dtypeStorage(b->dtype)) return std::nullopt;
  return fail(op, std::string(dir) + "/" + std::string(a_slot) + "/0",
              std::string(a_slot) + " is " + std::string(dtypeName(a->dtype)) + " but " + std::string(b_slot) + " is " +
                  std::string(dtypeName(b->dtype)));
}

Result requireFloat(const OpView& op, std::string_view slot, const Var* v) {
  if (!v) return std::nullopt;
  auto st = dtypeStorage(v->dtype);
  if (st == DTypeStorage::F32 || st == DTypeStorage::F64) return std::nullopt;
  return fail(op, "/inputs/" + std::string(slot) + "/0",
              std::string(slot) + " is " + std::string(dtypeName(v->dtype)) + ", not a floating type");
}

Result checkXShape(const OpView& op, const Var* x) {
  ShapeDims want = x->shape;
  want.insert(want.begin(), 0);
  return requireDims(op, "/outputs", "XShape", op.out("XShape"), want, "[0, ...X dims]");
}

}  // namespace spopt::ops
