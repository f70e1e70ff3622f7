#pragma once
// Building new ops and vars for passes, in the program's dialect, from the op catalogue
// (ops/op_def.h), without touching raw JSON. Slots and attributes are named canonically (X, Out,
// trans_x) and written as the program's dialect spells them (x, in0, transpose_x); in PIR an
// attribute that is an operand (reshape's shape) gets its pd_op.full_int_array / pd_op.full,
// inserted just before the op.
//
//   OpBuilder b(*ar.block);                                   // where new vars are declared
//   Var* part = b.freshVar("x.part", {4, 8}, DType::Float32, /*dist_like=*/x);
//   b.collective({CollectiveKind::ReduceScatter, ring, nranks}, x, part)
//       .copyAttrs(ar, {"op_role", "op_namescope"})
//       .copyDistAttr(x->dist_attr, {"process_mesh", "chunk_id"}).stream("default")
//       .insertBefore(ar);                                     // def-use kept current
//   b.create(opDef("matmul")).input("X", {a}).input("Y", {w}).output("Out", {y}).attrBool("trans_y", true)
//
// A NewOp is a value until inserted; insertBefore / insertAt return the Op* in the block.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ir/collective_kind.h"
#include "ir/ir.h"
#include "ir/op_role.h"
#include "ops/op_def.h"

namespace spopt {

// What a new collective is; the dialect is the program's. Legacy spells an all-reduce's reduction
// in the type (c_allreduce_max); current and PIR write reduce_type. Attrs written: ring_id,
// nranks (when > 0), reduce_type, root (broadcast) or root_id (reduce).
struct CollectiveDesc {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int64_t ring_id = 0;
  int64_t nranks = 0;
  ReduceOp reduce = ReduceOp::Sum;  // all-reduce only
  int64_t root = 0;                 // broadcast, reduce: the root's position in the ring
};

// The catalogue's definition of a collective kind.
const OpDef& collectiveDef(CollectiveKind k);

// A send or receive; the dialect is the program's (send_v2 / recv_v2, pd_op.p_send / pd_op.p_recv).
// `peer`: the partner's position in ring `ring_id`. Attrs written: ring_id, peer, and for a receive
// dtype (a Paddle code in legacy programs, a name in PIR) and, legacy only, out_shape — both
// from the received var, which must be declared first.
struct P2PDesc {
  int64_t ring_id = 0;
  int64_t peer = 0;
};
// The catalogue's definition of a send or a receive.
const OpDef& p2pDef(P2PKind k);

// An op under construction. Setters copy text into the job's arena; they return *this. Slot and
// attribute names are canonical when the op has a definition (mapped to its dialect), else as given.
class NewOp {
 public:
  NewOp(Block& block, const OpDef& def, const Spelling& spelling);  // one of def.spellings: its type text is kept, not copied
  NewOp(Block& block, const Op& original);  // a copy of `original`: type, slots, attrs, dist_attr

  NewOp& input(std::string_view slot, std::initializer_list<Var*> vars);
  NewOp& input(std::string_view slot, const std::vector<Var*>& vars);
  NewOp& output(std::string_view slot, std::initializer_list<Var*> vars);
  NewOp& output(std::string_view slot, const std::vector<Var*>& vars);

  // Typed attrs (attrs object). Distinct names: a string literal must never pick the bool one.
  NewOp& attrBool(std::string_view key, bool v);
  NewOp& attrInt(std::string_view key, int64_t v);
  NewOp& attrDouble(std::string_view key, double v);
  NewOp& attrString(std::string_view key, std::string_view v);
  NewOp& attrInts(std::string_view key, const std::vector<int64_t>& v);
  NewOp& attrRaw(std::string_view key, std::string_view raw_json);  // copying another op's value
  // Copies each of `keys` present in `from`'s attrs (e.g. {"op_role", "op_namescope"}).
  NewOp& copyAttrs(const Op& from, std::initializer_list<std::string_view> keys);
  NewOp& phase(Phase p);  // attrs.op_role

  // The op's dist_attr (created on first use).
  NewOp& copyDistAttr(const JsonObject& from, std::initializer_list<std::string_view> keys);
  NewOp& copyDistAttr(const JsonObject& from);  // every member
  NewOp& distAttrRaw(std::string_view key, std::string_view raw_json);
  NewOp& stream(std::string_view execution_stream);

  Op& op() { return op_; }
  const OpDef* def() const { return def_; }
  // Inserts before `pos` (an op of the block it goes into), resolving and registering def-use.
  Op* insertBefore(Op& pos);
  Op* insertAt(Block& block, Block::OpIter pos);

 private:
  // The slot's name in the op's dialect: the catalogue's text, or `canonical` kept in the job.
  std::string_view slot(std::string_view canonical, bool input) const;
  // PIR: an attribute that is operand in<i>: a constant op writing a fresh var, inserted first.
  bool constantOperand(std::string_view canonical, const std::vector<int64_t>* ints, double scalar);

  Block& block_;
  Job& job_;
  const OpDef* def_ = nullptr;
  Dialect dialect_ = Dialect::Legacy;
  Op op_;
  std::vector<NewOp> constants_;  // inserted before the op
  bool inserted_ = false;
};

// Makes ops and vars for one block.
class OpBuilder {
 public:
  explicit OpBuilder(Block& block);
  Block& block() { return block_; }
  Job& job() { return job_; }

  Dialect dialect() const { return dialect_; }

  // An op of the catalogue in the program's dialect. std::logic_error when it has no spelling there.
  NewOp create(const OpDef& def);
  // A copy of `op` (type, slots, attrs, dist_attr), to edit and insert.
  NewOp clone(const Op& op) { return NewOp(block_, op); }
  // A collective reading `in` and writing `out`. std::logic_error for a legacy AVG all-reduce (no
  // such op) or an Identity with a ring.
  NewOp collective(const CollectiveDesc& d, Var* in, Var* out);
  // A send of `x` to `d.peer`, and a receive from `d.peer` into `out`.
  NewOp send(const P2PDesc& d, Var* x);
  NewOp recv(const P2PDesc& d, Var* out);

  // A name not declared in any block of the program: `base`, else `base_1`, `base_2`, ...
  std::string uniqueName(std::string_view base) const;
  // Declares a fresh var in this block (name from uniqueName). `dist_like`: copies its dist_attr
  // (when it has one); pass nullptr for none. `dims_mapping` (when not empty) replaces the copy's.
  Var* freshVar(std::string_view base, std::vector<int64_t> shape, DType dtype, const Var* dist_like = nullptr,
                const std::vector<int64_t>& dims_mapping = {}, bool persistable = false);

 private:
  Block& block_;
  Job& job_;
  Dialect dialect_;
};

}  // namespace spopt
