#include "ops/op_builder.h"

#include <stdexcept>

#include "ops/shape_math.h"

namespace spopt {

namespace {
// An attribute's name in the op's dialect (PIR's transpose_x for trans_x).
std::string_view attrKey(const OpDef* def, Dialect d, std::string_view canonical) {
  const AttrDef* a = def ? def->attr(canonical) : nullptr;
  return a && d == Dialect::Pir && !a->pir_name.empty() ? a->pir_name : canonical;
}
}  // namespace

const OpDef& collectiveDef(CollectiveKind k) {
  for (const OpDef* d : allOpDefs())
    if (d->collective == k) return *d;
  throw std::logic_error("op catalogue: no collective of this kind");
}

const OpDef& p2pDef(P2PKind k) {
  for (const OpDef* d : allOpDefs())
    if (d->p2p == k) return *d;
  throw std::logic_error("op catalogue: no point-to-point op of this kind");
}

// A built op's type views the catalogue's spelling (or the original's text), not a fresh copy:
// resolveOp's per-thread cache is keyed by the text's address, so every op of a type built here
// hits one entry instead of hashing its name on each of the analyses' questions.
NewOp::NewOp(Block& block, const OpDef& def, const Spelling& spelling)
    : block_(block), job_(*block.program->job), def_(&def), dialect_(spelling.dialect), op_(makeOp(job_, {})) {
  op_.type = spelling.type;  // the catalogue's: static storage
}

NewOp::NewOp(Block& block, const Op& original) : block_(block), job_(*block.program->job), op_(makeOp(job_, {})) {
  op_.type = original.type;  // the job's, as long-lived as the new op
  ResolvedOp r = resolveOp(original.type);
  def_ = r.def;
  dialect_ = r ? r.spelling->dialect : block.program->dialect;
  for (const Slot& s : original.inputs) {
    addInput(op_, job_, s.name, {});
    for (const Arg& a : s.args) op_.inputs.back().args.push_back({a.name, a.var});
  }
  for (const Slot& s : original.outputs) {
    addOutput(op_, job_, s.name, {});
    for (const Arg& a : s.args) op_.outputs.back().args.push_back({a.name, a.var});
  }
  for (const Member& m : original.attrs.items()) op_.attrs.setRaw(job_.editArena(), m.key, m.raw);
  if (original.hasDistAttr()) copyDistAttr(original.dist_attr);
}

std::string_view NewOp::slot(std::string_view canonical, bool input) const {
  const OperandDef* o = def_ ? (input ? def_->input(canonical) : def_->output(canonical)) : nullptr;
  return o ? slotName(*o, dialect_, input) : job_.editArena().store(canonical);  // the catalogue's text lives as long
}

bool NewOp::constantOperand(std::string_view canonical, const std::vector<int64_t>* ints, double scalar) {
  const AttrDef* a = def_ ? def_->attr(canonical) : nullptr;
  if (!a || dialect_ != Dialect::Pir || a->pir_operand < 0) return false;
  OpBuilder b(block_);
  const OpDef& def = opDef(ints ? "full_int_array" : "full");
  // A Bool operand (update_loss_scaling_'s stop_update) is a bool pd_op.full holding 0 or 1.
  const bool boolean = !ints && a->kind == AttrKind::Bool;
  const bool integral = ints || a->kind == AttrKind::Int || boolean;
  const DType dtype = boolean ? DType::Bool : integral ? DType::Int64 : DType::Float32;
  Var* v = b.freshVar(std::string(op_.type.substr(op_.type.find('.') + 1)) + "." + std::string(canonical),
                      ints ? std::vector<int64_t>{int64_t(ints->size())} : std::vector<int64_t>{1}, dtype);
  NewOp c = b.create(def);
  c.output("Out", {v});
  if (ints) c.op_.attrs.setIntArray(job_.editArena(), "value", *ints);
  else if (integral) c.op_.attrs.setInt(job_.editArena(), "value", int64_t(scalar));
  else c.op_.attrs.setDouble(job_.editArena(), "value", scalar);
  c.op_.attrs.setString(job_.editArena(), "dtype", dtypeName(dtype));
  c.op_.attrs.setIntArray(job_.editArena(), "shape", v->shape);
  constants_.push_back(std::move(c));
  std::string in = "in" + std::to_string(a->pir_operand);
  addInput(op_, job_, in, {});
  op_.inputs.back().args.push_back({v->name, v});
  return true;
}


NewOp& NewOp::input(std::string_view canonical, const std::vector<Var*>& vars) {
  addInput(op_, job_, slot(canonical, true), {});
  for (Var* v : vars) op_.inputs.back().args.push_back({v->name, v});
  return *this;
}
NewOp& NewOp::input(std::string_view slot, std::initializer_list<Var*> vars) { return input(slot, std::vector<Var*>(vars)); }
NewOp& NewOp::output(std::string_view canonical, const std::vector<Var*>& vars) {
  addOutput(op_, job_, slot(canonical, false), {});
  for (Var* v : vars) op_.outputs.back().args.push_back({v->name, v});
  return *this;
}
NewOp& NewOp::output(std::string_view slot, std::initializer_list<Var*> vars) { return output(slot, std::vector<Var*>(vars)); }

NewOp& NewOp::attrBool(std::string_view key, bool v) { return op_.attrs.setBool(job_.editArena(), attrKey(def_, dialect_, key), v), *this; }
NewOp& NewOp::attrInt(std::string_view key, int64_t v) {
  if (constantOperand(key, nullptr, double(v))) return *this;
  return op_.attrs.setInt(job_.editArena(), attrKey(def_, dialect_, key), v), *this;
}
NewOp& NewOp::attrDouble(std::string_view key, double v) {
  if (constantOperand(key, nullptr, v)) return *this;
  return op_.attrs.setDouble(job_.editArena(), attrKey(def_, dialect_, key), v), *this;
}
NewOp& NewOp::attrString(std::string_view key, std::string_view v) { return op_.attrs.setString(job_.editArena(), attrKey(def_, dialect_, key), v), *this; }
NewOp& NewOp::attrInts(std::string_view key, const std::vector<int64_t>& v) {
  if (constantOperand(key, &v, 0)) return *this;
  return op_.attrs.setIntArray(job_.editArena(), attrKey(def_, dialect_, key), v), *this;
}
NewOp& NewOp::attrRaw(std::string_view key, std::string_view raw) { return op_.attrs.setRaw(job_.editArena(), attrKey(def_, dialect_, key), raw), *this; }

NewOp& NewOp::copyAttrs(const Op& from, std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (const auto* raw = from.attrs.find(k)) op_.attrs.setRaw(job_.editArena(), k, *raw);
  return *this;
}
NewOp& NewOp::phase(Phase p) { return setPhase(op_, job_, p), *this; }

NewOp& NewOp::copyDistAttr(const JsonObject& from, std::initializer_list<std::string_view> keys) {
  ensureField(op_.fields, "dist_attr");
  for (auto k : keys)
    if (const auto* raw = from.find(k)) op_.dist_attr.setRaw(job_.editArena(), k, *raw);
  return *this;
}
NewOp& NewOp::copyDistAttr(const JsonObject& from) {
  ensureField(op_.fields, "dist_attr");
  for (const Member& m : from.items()) op_.dist_attr.setRaw(job_.editArena(), m.key, m.raw);
  return *this;
}
NewOp& NewOp::distAttrRaw(std::string_view key, std::string_view raw) {
  ensureField(op_.fields, "dist_attr");
  op_.dist_attr.setRaw(job_.editArena(), key, raw);
  return *this;
}
NewOp& NewOp::stream(std::string_view s) { return setExecutionStream(op_, job_, s), *this; }

Op* NewOp::insertAt(Block& block, Block::OpIter pos) {
  if (inserted_) throw std::logic_error("NewOp: " + std::string(op_.type) + " was inserted already");
  inserted_ = true;
  for (NewOp& c : constants_) {
    // A constant operand belongs to its op's phase and scope: without them it would cut the op's
    // run of backward ops in two for the passes that schedule by phase.
    for (std::string_view key : {"op_role", "op_namescope"})
      if (const auto* raw = op_.attrs.find(key); raw && !c.op_.attrs.find(key)) c.op_.attrs.setRaw(job_.editArena(), key, *raw);
    c.insertAt(block, pos);
  }
  return block.insertOp(pos, std::move(op_));
}
Op* NewOp::insertBefore(Op& pos) { return insertAt(*pos.block, pos.self); }

OpBuilder::OpBuilder(Block& block) : block_(block), job_(*block.program->job), dialect_(block.program->dialect) {}

NewOp OpBuilder::create(const OpDef& def) {
  const Spelling* s = def.spelling(dialect_);
  if (!s) throw std::logic_error("OpBuilder: " + std::string(def.name) + " has no " + std::string(dialectName(dialect_)) + " spelling");
  return NewOp(block_, def, *s);
}

NewOp OpBuilder::collective(const CollectiveDesc& d, Var* in, Var* out) {
  const OpDef& def = collectiveDef(d.kind);
  const Spelling* s = def.spelling(dialect_);
  bool reduce_in_name = d.kind == CollectiveKind::AllReduce && s && s->reduce;
  if (reduce_in_name) {
    s = nullptr;
    for (const Spelling& sp : def.spellings)
      if (sp.dialect == dialect_ && sp.reduce == d.reduce && !sp.inplace) s = &sp;
    if (!s) throw std::logic_error("OpBuilder: a legacy all-reduce cannot average (no c_allreduce_avg)");
  }
  if (!s) throw std::logic_error("OpBuilder: no " + std::string(dialectName(dialect_)) + " spelling of " + std::string(def.name));
  NewOp op(block_, def, *s);
  op.input("X", {in}).output("Out", {out});
  op.attrInt("ring_id", d.ring_id);
  if (d.nranks > 0) op.attrInt("nranks", d.nranks);
  if (d.kind == CollectiveKind::AllReduce && !reduce_in_name) op.attrInt("reduce_type", static_cast<int>(d.reduce));
  if (std::string_view root = collectiveRootAttr(d.kind); !root.empty()) op.attrInt(root, d.root);
  return op;
}

NewOp OpBuilder::send(const P2PDesc& d, Var* x) {
  NewOp op = create(p2pDef(P2PKind::Send));
  op.input("X", {x}).attrInt("ring_id", d.ring_id).attrInt("peer", d.peer);
  return op;
}

NewOp OpBuilder::recv(const P2PDesc& d, Var* out) {
  NewOp op = create(p2pDef(P2PKind::Recv));
  op.output("Out", {out}).attrInt("ring_id", d.ring_id).attrInt("peer", d.peer);
  if (dialect_ == Dialect::Pir) return op.attrString("dtype", dtypeName(out->dtype)), op;
  if (auto code = paddleDtypeCode(out->dtype)) op.attrInt("dtype", *code);
  else op.attrString("dtype", dtypeName(out->dtype));
  return op.attrInts("out_shape", out->shape), op;
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
  v.name = job_.editArena().store(uniqueName(base));
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.persistable = persistable;
  // Every fresh var has one of two key layouts: shared, not one list per var.
  static const std::vector<Field> kPlain{{"name", {}}, {"shape", {}}, {"dtype", {}}, {"persistable", {}}};
  static const std::vector<Field> kDist{{"name", {}}, {"shape", {}}, {"dtype", {}}, {"persistable", {}}, {"dist_attr", {}}};
  v.fields = Fields(&kPlain);
  if (dist_like && dist_like->hasDistAttr()) {
    v.dist_attr = dist_like->dist_attr;
    if (!dims_mapping.empty()) v.dist_attr.setIntArray(job_.editArena(), "dims_mapping", dims_mapping);
    v.fields = Fields(&kDist);
  }
  return block_.addVar(std::move(v));
}

}  // namespace spopt
