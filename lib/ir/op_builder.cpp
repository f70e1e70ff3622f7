#include "ir/op_builder.h"

#include <stdexcept>

namespace spopt {

namespace {
bool isCollectiveType(std::string_view t, bool& legacy) {
  static constexpr std::string_view kLegacy[] = {"c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod",
                                                 "c_reducescatter", "c_allgather",     "c_broadcast"};
  static constexpr std::string_view kCurrent[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast"};
  for (auto x : kLegacy)
    if (t == x) return legacy = true;
  for (auto x : kCurrent)
    if (t == x) return !(legacy = false);
  return false;
}
}  // namespace

bool usesLegacyCollectives(const Program& p, bool fallback) {
  for (const auto& b : p.blocks)
    for (const Op& op : b->ops) {
      bool legacy = false;
      if (isCollectiveType(op.type, legacy)) return legacy;
    }
  return fallback;
}
std::string_view collectiveInSlot(bool legacy) { return legacy ? "X" : "x"; }
std::string_view collectiveOutSlot(bool legacy) { return legacy ? "Out" : "out"; }

NewOp::NewOp(Job& job, std::string_view type) : job_(job), op_(makeOp(job, type)) {}

NewOp& NewOp::input(std::string_view slot, const std::vector<Var*>& vars) {
  addInput(op_, job_, slot, {});
  for (Var* v : vars) op_.inputs.back().args.push_back({v->name, v});
  return *this;
}
NewOp& NewOp::input(std::string_view slot, std::initializer_list<Var*> vars) { return input(slot, std::vector<Var*>(vars)); }
NewOp& NewOp::output(std::string_view slot, const std::vector<Var*>& vars) {
  addOutput(op_, job_, slot, {});
  for (Var* v : vars) op_.outputs.back().args.push_back({v->name, v});
  return *this;
}
NewOp& NewOp::output(std::string_view slot, std::initializer_list<Var*> vars) { return output(slot, std::vector<Var*>(vars)); }

NewOp& NewOp::attrBool(std::string_view key, bool v) { return op_.attrs.setBool(job_.arena, key, v), *this; }
NewOp& NewOp::attrInt(std::string_view key, int64_t v) { return op_.attrs.setInt(job_.arena, key, v), *this; }
NewOp& NewOp::attrDouble(std::string_view key, double v) { return op_.attrs.setDouble(job_.arena, key, v), *this; }
NewOp& NewOp::attrString(std::string_view key, std::string_view v) { return op_.attrs.setString(job_.arena, key, v), *this; }
NewOp& NewOp::attrInts(std::string_view key, const std::vector<int64_t>& v) { return op_.attrs.setIntArray(job_.arena, key, v), *this; }
NewOp& NewOp::attrRaw(std::string_view key, std::string_view raw) { return op_.attrs.setRaw(job_.arena, key, raw), *this; }
NewOp& NewOp::copyAttrs(const Op& from, std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (const auto* raw = from.attrs.find(k)) op_.attrs.setRaw(job_.arena, k, *raw);
  return *this;
}
NewOp& NewOp::phase(Phase p) { return setPhase(op_, job_, p), *this; }

NewOp& NewOp::copyDistAttr(const JsonObject& from, std::initializer_list<std::string_view> keys) {
  ensureField(op_.fields, "dist_attr");
  for (auto k : keys)
    if (const auto* raw = from.find(k)) op_.dist_attr.setRaw(job_.arena, k, *raw);
  return *this;
}
NewOp& NewOp::copyDistAttr(const JsonObject& from) {
  ensureField(op_.fields, "dist_attr");
  for (const Member& m : from.items()) op_.dist_attr.setRaw(job_.arena, m.key, m.raw);
  return *this;
}
NewOp& NewOp::distAttrRaw(std::string_view key, std::string_view raw) {
  ensureField(op_.fields, "dist_attr");
  op_.dist_attr.setRaw(job_.arena, key, raw);
  return *this;
}
NewOp& NewOp::stream(std::string_view s) { return setExecutionStream(op_, job_, s), *this; }

Op* NewOp::insertAt(Block& block, Block::OpIter pos) {
  if (inserted_) throw std::logic_error("NewOp: " + std::string(op_.type) + " was inserted already");
  inserted_ = true;
  return block.insertOp(pos, std::move(op_));
}
Op* NewOp::insertBefore(Op& pos) { return insertAt(*pos.block, pos.self); }

OpBuilder::OpBuilder(Block& block) : block_(block), job_(*block.program->job) {}

NewOp OpBuilder::collective(const CollectiveDesc& d, Var* in, Var* out) {
  if (d.pir) {
    NewOp op(job_, job_.arena.store("pd_op." + std::string(collectiveOpType(d.kind, false))));
    op.input("in0", {in}).output("out0", {out});
    op.attrInt("ring_id", d.ring_id);
    if (d.nranks > 0) op.attrInt("nranks", d.nranks);
    if (d.kind == CollectiveKind::AllReduce) op.attrInt("reduce_type", static_cast<int>(d.reduce));
    if (d.kind == CollectiveKind::Broadcast) op.attrInt("root", d.root);
    return op;
  }
  std::string_view type = collectiveOpType(d.kind, d.legacy);
  if (d.kind == CollectiveKind::AllReduce && d.legacy) type = legacyAllReduceType(d.reduce);
  if (type.empty()) throw std::logic_error("OpBuilder: a legacy all-reduce cannot average (no c_allreduce_avg)");
  bool legacy = d.legacy || d.kind == CollectiveKind::Identity;
  NewOp op(job_, type);
  op.input(collectiveInSlot(legacy), {in}).output(collectiveOutSlot(legacy), {out});
  op.attrInt("ring_id", d.ring_id);
  if (d.nranks > 0) op.attrInt("nranks", d.nranks);
  if (d.kind == CollectiveKind::AllReduce && !d.legacy) op.attrInt("reduce_type", static_cast<int>(d.reduce));
  if (d.kind == CollectiveKind::Broadcast) op.attrInt("root", d.root);
  return op;
}

std::string OpBuilder::uniqueName(std::string_view base) const {
  auto taken = [&](const std::string& n) {
    for (const auto& b : block_.program->blocks)
      if (b->findLocal(n)) return true;
    return false;
  };
  std::string name(base);
  for (int64_t i = 1; taken(name); ++i) name = std::string(base) + "_" + std::to_string(i);
  return name;
}

Var* OpBuilder::freshVar(std::string_view base, std::vector<int64_t> shape, DType dtype, const Var* dist_like,
                         const std::vector<int64_t>& dims_mapping, bool persistable) {
  Var v;
  v.name = job_.arena.store(uniqueName(base));
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.persistable = persistable;
  v.fields = {{"name", {}}, {"shape", {}}, {"dtype", {}}, {"persistable", {}}};
  if (dist_like && dist_like->hasDistAttr()) {
    v.dist_attr = dist_like->dist_attr;
    if (!dims_mapping.empty()) v.dist_attr.setIntArray(job_.arena, "dims_mapping", dims_mapping);
    v.fields.push_back({"dist_attr", {}});
  }
  return block_.addVar(std::move(v));
}

}  // namespace spopt
