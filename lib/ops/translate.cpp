#include "ops/translate.h"

#include <string>
#include <vector>

#include "ir/json_pointer.h"
#include "ir/json_text.h"
#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "ops/shape_math.h"
#include "support/error.h"

namespace spopt {
namespace {

class PirTranslator {
 public:
  explicit PirTranslator(Block& b) : block_(b), builder_(b), job_(*b.program->job) {}

  void translate(Op& op) {
    ResolvedOp r = resolveOp(op.type);
    if (r && r.spelling->dialect == Dialect::Pir) return;
    if (!r || !r.def->spelling(Dialect::Pir)) fail(op, "has no PIR spelling in the op catalogue (docs/ops.md)");
    const OpDef& def = *r.def;
    OpView old(op, r);
    if (&def == &opDef("split") && old.outputCount("Out") > 1) return translateSplit(op, old);
    NewOp n = builder_.create(def);
    for (const OperandDef& o : def.inputs) addValues(op, old, o, true, n);
    for (const OperandDef& o : def.outputs) addValues(op, old, o, false, n);
    addUnusedGrads(old, def, n);
    copyAttrs(op, def, n);
    if (!kept_.empty()) n.attrRaw(kLegacySlotsAttr, stringArrayToRaw(kept_));
    kept_.clear();
    // PIR's p_recv names its dtype as a DataType; legacy recv_v2 gives Paddle's code. (out_shape,
    // which p_recv does without, rides along: the result's type carries the shape.)
    if (def.p2p == P2PKind::Recv)
      if (const std::string_view* raw = op.attrs.find("dtype"))
        if (std::optional<DType> t = dtypeFromAttr(*raw)) n.attrString("dtype", dtypeName(*t));
    if (def.collective == CollectiveKind::AllReduce && !op.attrs.has("reduce_type"))
      n.attrInt("reduce_type", static_cast<int>(r.spelling->reduce.value_or(ReduceOp::Sum)));
    if (op.hasDistAttr()) n.copyDistAttr(op.dist_attr);
    Op* added = n.insertBefore(op);
    padOperands(*added);
    for (size_t i = 0; i < pending_parts_.size(); ++i) {  // after the op, a builtin.slice per part
      NewOp slice = builder_.create(opDef("vector_slice"));
      slice.input("X", {pending_vector_}).output("Out", {pending_parts_[i]}).attrInt("index", int64_t(i)).copyAttrs(op, {"op_role", "op_namescope"});
      if (op.hasDistAttr()) slice.copyDistAttr(op.dist_attr);
      slice.insertBefore(op);
    }
    pending_parts_.clear();
    if (!pending_split_.empty()) {
      NewOp split = builder_.create(opDef("vector_split"));
      split.input("X", {pending_vector_}).copyAttrs(op, {"op_role", "op_namescope"});
      for (size_t i = 0; i < pending_split_.size(); ++i) split.output("out" + std::to_string(i), {pending_split_[i]});
      if (op.hasDistAttr()) split.copyDistAttr(op.dist_attr);
      split.insertBefore(op);
      pending_split_.clear();
    }
    block_.eraseOp(&op);
  }

 private:
  [[noreturn]] void fail(const Op& op, const std::string& why) {
    throw InputError(job_.path, opPointer(op), std::string(op.type) + " " + why);
  }

  // One canonical operand: its var, or (several vars in one legacy slot) a builtin.combine vector.
  void addValues(Op& op, const OpView& old, const OperandDef& o, bool input, NewOp& n) {
    const Slot* s = input ? old.input(o.name) : old.output(o.name);
    if (!s || s->args.empty()) {
      // An operand PIR reads only the shape of (squeeze_grad's x) where the legacy op has its shape
      // record instead: the record, as PIR programs before Paddle 3 pass it (ops/index_math.h).
      const Slot* record = input && o.pir >= 0 && !o.reads_buffer ? old.input("XShape") : nullptr;
      if (record && record->args.size() == 1 && record->args.front().var) n.input(o.name, {record->args.front().var});
      return;
    }
    std::vector<Var*> vars;
    for (const Arg& a : s->args) vars.push_back(a.var);
    if (o.pir < 0) {
      if (o.reads_buffer) fail(op, "slot " + std::string(o.name) + " has no PIR operand");
      keep(o.name, vars);  // a shape record (XShape) PIR does without
      if (o.name == "XShape") shape_records_.insert(shape_records_.end(), vars.begin(), vars.end());
      return;
    }
    if (vars.size() > 1 || o.vector) {
      if (input) vars = {combine(op, vars)};
      else if (o.vector) vars = {splitParts(vars)};
      else if (old.has(trait::VectorResult)) vars = {parts(op, vars)};
      else fail(op, "writes " + std::to_string(vars.size()) + " vars to " + std::string(o.name) + ": PIR has no such result");
    }
    input ? n.input(o.name, vars) : n.output(o.name, vars);
  }

  // A PIR op has every result: a gradient the legacy op did not compute (X@GRAD of an input that
  // needs none) becomes a fresh value, shaped as its input, that nothing reads.
  void addUnusedGrads(const OpView& old, const OpDef& def, NewOp& n) {
    for (const OperandDef& o : def.outputs) {
      const Slot* present = old.output(o.name);
      if (o.pir < 0 || (present && !present->args.empty()) || !o.name.ends_with("@GRAD")) continue;
      const Var* like = old.in(o.name.substr(0, o.name.size() - 5));
      if (!like) continue;
      n.output(o.name, {builder_.freshVar(std::string(like->name) + "@GRAD.unused", like->shape, like->dtype, like)});
      keep(o.name, {});
    }
  }

  // A legacy slot PIR has no place for (or a result the legacy op lacked), kept by var name so
  // that translating back (translateToLegacy) gives the same op.
  void keep(std::string_view slot, const std::vector<Var*>& vars) {
    std::string entry = std::string(slot) + "=";
    for (size_t i = 0; i < vars.size(); ++i) entry += (i ? "," : "") + std::string(vars[i]->name);
    kept_.push_back(std::move(entry));
  }

  // A vector of the parts (of any shapes: replay finds them by the operands, ops/vector_parts.h).
  Var* combine(const Op& op, const std::vector<Var*>& parts) {
    for (Var* v : parts)
      if (v->dtype != parts.front()->dtype) fail(op, "combines vars of different dtypes: a vector holds one");
    Var* vec = builder_.freshVar(std::string(parts.front()->name) + ".combined", {int64_t(parts.size())}, parts.front()->dtype);
    NewOp c = builder_.create(opDef("combine"));
    for (size_t i = 0; i < parts.size(); ++i) c.input("in" + std::to_string(i), {parts[i]});  // one operand a part
    c.output("Out", {vec}).copyAttrs(op, {"op_role", "op_namescope"});
    c.insertBefore(const_cast<Op&>(op));
    return vec;
  }

  // The vars a Tensor[] result (check_finite_and_unscale's Out) holds: one vector result, taken
  // apart by one builtin.split after the op, as Paddle writes it.
  Var* splitParts(const std::vector<Var*>& vars) {
    pending_vector_ = builder_.freshVar(std::string(vars.front()->name) + ".parts", {int64_t(vars.size())}, vars.front()->dtype);
    pending_split_ = vars;
    return pending_vector_;
  }

  // Several vars a vector-result op writes to one slot (stack_grad's X@GRAD): one vector result,
  // taken apart by builtin.slice ops once the op is in place.
  Var* parts(const Op& op, const std::vector<Var*>& vars) {
    for (Var* v : vars)
      if (v->shape != vars.front()->shape || v->dtype != vars.front()->dtype)
        fail(op, "writes vars of different shapes to one result: replay holds a vector as equal parts");
    pending_vector_ = builder_.freshVar(std::string(vars.front()->name) + ".parts", {int64_t(vars.size())}, vars.front()->dtype);
    pending_parts_ = vars;
    return pending_vector_;
  }

  // Catalogue attributes renamed (and made operands where PIR passes them so); others kept as is.
  void copyAttrs(const Op& op, const OpDef& def, NewOp& n) {
    for (const Member& m : op.attrs.items()) {
      std::string key(m.key);
      const AttrDef* a = def.attr(key);
      if (!a) {
        n.op().attrs.setRaw(job_.editArena(), m.key, m.raw);
        continue;
      }
      if (a->pir_operand >= 0) {
        if (a->kind == AttrKind::Ints) {
          if (auto v = rawToIntsLenient(m.raw)) n.attrInts(key, *v);
          else fail(op, "attribute " + key + " is not a list of integers");
        } else if (a->kind == AttrKind::Bool) {
          if (auto b = rawToBoolLenient(m.raw)) n.attrInt(key, *b ? 1 : 0);
          else fail(op, "attribute " + key + " is not a boolean");
        } else if (auto x = rawToNumber(m.raw)) {
          a->kind == AttrKind::Int ? n.attrInt(key, int64_t(*x)) : n.attrDouble(key, *x);
        } else {
          fail(op, "attribute " + key + " is not a number");
        }
        continue;
      }
      n.attrRaw(key, m.raw);
    }
  }

  // split(X) -> Out[k] in k equal parts: pd_op.split_with_num into a vector, a builtin.slice a part.
  void translateSplit(Op& op, const OpView& old) {
    const Slot* outs = old.output("Out");
    Var* x = old.in("X");
    size_t k = outs->args.size();
    for (const Arg& a : outs->args)
      if (a.var->shape != outs->args.front().var->shape) fail(op, "splits into unequal parts: PIR's split_with_num makes equal ones");
    int64_t axis = old.attrs.getInt("axis").value_or(0);
    Var* vec = builder_.freshVar(std::string(outs->args.front().var->name) + ".parts", {int64_t(k)}, x->dtype);
    NewOp s = builder_.create(opDef("split_with_num"));
    s.input("X", {x}).output("Out", {vec}).attrInt("axis", axis);
    for (const Member& m : op.attrs.items())
      if (m.key != "axis") s.attrRaw(m.key, m.raw);  // num, sections, op_role...: kept in order
    s.attrInt("num", int64_t(k));
    if (op.hasDistAttr()) s.copyDistAttr(op.dist_attr);
    s.insertBefore(op);
    for (size_t i = 0; i < k; ++i) {
      NewOp slice = builder_.create(opDef("vector_slice"));
      slice.input("X", {vec}).output("Out", {outs->args[i].var}).attrInt("index", int64_t(i)).copyAttrs(op, {"op_role", "op_namescope"});
      if (op.hasDistAttr()) slice.copyDistAttr(op.dist_attr);
      slice.insertBefore(op);
    }
    block_.eraseOp(&op);
  }

  // PIR values are positional: a missing optional operand before a present one is a null value
  // (an empty slot), and the slots go in index order.
  void padOperands(Op& op) {
    for (auto* slots : {&op.inputs, &op.outputs}) {
      std::string prefix = slots == &op.inputs ? "in" : "out";
      std::vector<Slot> by_index;
      for (Slot& s : *slots) {
        size_t i = std::stoul(std::string(s.name.substr(prefix.size())));
        if (by_index.size() <= i) by_index.resize(i + 1);
        by_index[i] = std::move(s);
      }
      for (size_t i = 0; i < by_index.size(); ++i)
        if (by_index[i].name.empty()) by_index[i].name = job_.editArena().store(prefix + std::to_string(i));
      *slots = std::move(by_index);
    }
  }

  Block& block_;
  OpBuilder builder_;
  Job& job_;
  std::vector<std::string> kept_;  // legacy_slots of the op being translated
  Var* pending_vector_ = nullptr;   // the vector result of the op being translated, and its parts
  std::vector<Var*> pending_parts_;
  std::vector<Var*> pending_split_;  // the parts of a Tensor[] result, for a builtin.split

 public:
  // XShape vars no PIR op holds: undeclared, as a PIR file has them (translateToLegacy makes them
  // again from the op's X), so that the job and its PIR file read back are the same.
  void dropShapeRecords() {
    for (Var* v : shape_records_)
      if (!v->removed && v->readers.empty() && v->writers.empty()) block_.removeVar(v);
    shape_records_.clear();
  }

 private:
  std::vector<Var*> shape_records_;
};

// In PIR every value is an op's result: the program's inputs become builtin.parameter
// (persistable) and pd_op.data ops at the top of the block, as Paddle's translator writes them.
void defineInputs(Block& b) {
  if (b.ops.empty()) return;
  Op& first = b.ops.front();
  OpBuilder builder(b);
  for (const auto& v : b.vars) {
    if (v->removed || v->readers.empty() || (!v->writers.empty() && !v->persistable)) continue;
    if (v->persistable) {
      builder.create(opDef("parameter")).output("Out", {v.get()}).attrString("parameter_name", v->name).insertBefore(first);
    } else {
      builder.create(opDef("data")).output("Out", {v.get()}).attrString("name", v->name).attrInts("shape", v->shape)
          .attrString("dtype", dtypeName(v->dtype)).insertBefore(first);
    }
  }
}

}  // namespace

void translateToPir(Job& job) {
  for (auto& p : job.programs) {
    if (p->dialect == Dialect::Pir) continue;
    p->dialect = Dialect::Pir;  // the builder writes the program's dialect
    for (auto& b : p->blocks) {
      std::vector<Op*> ops;
      for (Op& op : b->ops) ops.push_back(&op);
      PirTranslator t(*b);
      for (Op* op : ops) t.translate(*op);
      t.dropShapeRecords();
      if (b->parent_idx < 0) defineInputs(*b);
    }
  }
}

}  // namespace spopt
