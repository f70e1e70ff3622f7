#pragma once
// Building new ops and vars for passes, in the program's dialect, without touching raw JSON.
//
//   OpBuilder b(*ar.block);                                   // where new vars are declared
//   Var* part = b.freshVar("x.part", {4, 8}, DType::Float32, /*dist_like=*/x);
//   b.collective({CollectiveKind::ReduceScatter, ring, nranks, legacy}, x, part)
//       .copyAttrs(ar, {"op_role", "op_namescope"})
//       .copyDistAttr(x->dist_attr, {"process_mesh", "chunk_id"}).stream("default")
//       .insertBefore(ar);                                     // def-use kept current
//
// fuse-allreduce-split's reduce-scatter is exactly that (plus nranks from the group). A NewOp is a
// value until inserted; insertBefore / insertAt return the Op* in the block (its id is fresh).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ir/collective_kind.h"
#include "ir/ir.h"
#include "ir/op_role.h"

namespace spopt {

// What a new collective is. `legacy`: c_* spelling with slots X/Out (all-reduce's reduction in the
// type: c_allreduce_max, ...); else all_reduce / reduce_scatter / ... with slots x/out and
// all_reduce's int `reduce_type`. Attrs written: ring_id, nranks (when > 0), reduce_type (current
// all_reduce), root (broadcast).
struct CollectiveDesc {
  CollectiveKind kind = CollectiveKind::AllReduce;
  int64_t ring_id = 0;
  int64_t nranks = 0;
  bool legacy = true;
  ReduceOp reduce = ReduceOp::Sum;  // all-reduce only
  int64_t root = 0;                 // broadcast only
  bool pir = false;                 // PIR spelling: "pd_op." + the current name, slots in0/out0
};

// The dialect a program writes collectives in: the first collective's (c_* = legacy); `fallback`
// when the program has none. One O(ops) walk: call once per pass, not per op.
bool usesLegacyCollectives(const Program& p, bool fallback = true);
// The input / output slot names of a dialect: X/Out (legacy) or x/out.
std::string_view collectiveInSlot(bool legacy);
std::string_view collectiveOutSlot(bool legacy);

// An op under construction. Setters copy text into the job's arena; they return *this.
class NewOp {
 public:
  NewOp(Job& job, std::string_view type);

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
  // Inserts before `pos` (an op of the block it goes into), resolving and registering def-use.
  Op* insertBefore(Op& pos);
  Op* insertAt(Block& block, Block::OpIter pos);

 private:
  Job& job_;
  Op op_;
  bool inserted_ = false;
};

// Makes ops and vars for one block.
class OpBuilder {
 public:
  explicit OpBuilder(Block& block);
  Block& block() { return block_; }
  Job& job() { return job_; }

  // A compute op of `type` (slots and attrs added through NewOp).
  NewOp compute(std::string_view type) { return NewOp(job_, type); }
  // A collective reading `in` and writing `out` in the dialect and with the attrs of `d`.
  // std::logic_error for a legacy AVG all-reduce (no such op) or an Identity with a ring.
  NewOp collective(const CollectiveDesc& d, Var* in, Var* out);

  // A name not declared in any block of the program: `base`, else `base_1`, `base_2`, ...
  std::string uniqueName(std::string_view base) const;
  // Declares a fresh var in this block (name from uniqueName). `dist_like`: copies its dist_attr
  // (when it has one); pass nullptr for none. `dims_mapping` (when not empty) replaces the copy's.
  Var* freshVar(std::string_view base, std::vector<int64_t> shape, DType dtype, const Var* dist_like = nullptr,
                const std::vector<int64_t>& dims_mapping = {}, bool persistable = false);

 private:
  Block& block_;
  Job& job_;
};

}  // namespace spopt
