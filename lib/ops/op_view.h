#pragma once
// An op seen through its catalogue definition: slots and attributes by their canonical (legacy)
// names whatever the op's dialect. `view.in("X")` is slot X of a legacy matmul_v2, x of a current
// one and in0 of pd_op.matmul; `view.attrs.getBool("trans_x")` reads PIR's transpose_x, and an
// attribute PIR passes as an operand (split_with_num's axis) is read from the pd_op.full that
// defines it. Ops the catalogue does not know are seen as they are (names unmapped).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ops/op_def.h"

namespace spopt {

class OpView;

// An op's attributes by canonical name (the JsonObject readers' semantics).
class AttrAccess {
 public:
  explicit AttrAccess(const OpView& v) : v_(v) {}
  const std::string_view* find(std::string_view canonical) const;
  // The raw value without splitting the op's attrs (JsonObject::raw): what the readers below use.
  std::optional<std::string_view> raw(std::string_view canonical) const;
  bool has(std::string_view canonical) const { return raw(canonical).has_value(); }
  std::optional<int64_t> getInt(std::string_view canonical) const;
  std::optional<double> getNumber(std::string_view canonical) const;
  std::optional<bool> getBool(std::string_view canonical) const;
  std::optional<std::string> getString(std::string_view canonical) const;
  std::optional<std::vector<int64_t>> getIntArray(std::string_view canonical) const;

 private:
  const OpView& v_;
};

class OpView {
 public:
  explicit OpView(const Op& op);
  OpView(const Op& op, ResolvedOp r);
  OpView(const OpView&) = delete;  // `attrs` points back at the view
  OpView& operator=(const OpView&) = delete;

  const Op& op() const { return op_; }
  const OpDef* def() const { return r_.def; }
  bool known() const { return r_.def != nullptr; }
  bool is(const OpDef& d) const { return r_.def == &d; }
  bool has(uint32_t t) const { return r_.def && r_.def->has(t); }
  Dialect dialect() const { return dialect_; }
  bool inplace() const { return r_.spelling && r_.spelling->inplace; }
  const std::string_view type;  // the type as written, for messages
  const AttrAccess attrs;

  // The op's own slot name for a canonical operand / result ("X" -> "in0" in PIR).
  std::string_view inSlot(std::string_view canonical) const;
  std::string_view outSlot(std::string_view canonical) const;
  const Slot* input(std::string_view canonical) const;
  const Slot* output(std::string_view canonical) const;
  Var* in(std::string_view canonical, size_t i = 0) const;
  Var* out(std::string_view canonical, size_t i = 0) const;
  size_t inputCount(std::string_view canonical) const;
  size_t outputCount(std::string_view canonical) const;

  // The definition of the operand the op holds in slot `slot` (its own name), or null.
  const OperandDef* inputOfSlot(std::string_view slot) const;
  const OperandDef* outputOfSlot(std::string_view slot) const;
  // False when the kernel uses only the shape and dtype of input `slot` (readsBuffer below).
  bool readsBuffer(std::string_view slot) const;
  // A JSON pointer suffix in canonical names ("/inputs/X/0", "/attrs/trans_x") in the op's own.
  std::string pointer(std::string_view canonical_where) const;
  // The raw value of a canonical attribute: the op's attr, or PIR's constant operand.
  const std::string_view* attrRaw(std::string_view canonical) const;
  std::optional<std::string_view> attrText(std::string_view canonical) const;  // the same, unsplit

 private:
  template <class Read>
  auto lookupAttr(std::string_view canonical, Read read) const -> decltype(read(std::declval<const JsonObject&>(), canonical));
  const Op& op_;
  ResolvedOp r_;
  Dialect dialect_ = Dialect::Legacy;
};

// False when `op`'s kernel uses only the shape and dtype of input `slot` (its own slot name):
// the operand's `reads_buffer` in the catalogue (Paddle's no-need-buffer inference).
bool readsBuffer(const Op& op, std::string_view slot);

}  // namespace spopt
