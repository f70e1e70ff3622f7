// PIR -> legacy: the inverse of translate.cpp's PirTranslator (see translate.h).
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/json_pointer.h"
#include "ir/json_text.h"
#include "ops/op_builder.h"
#include "ops/op_view.h"
#include "ops/translate.h"
#include "support/error.h"

namespace spopt {
namespace {

class LegacyTranslator {
 public:
  explicit LegacyTranslator(Block& b) : block_(b), builder_(b), job_(*b.program->job) {}

  void translate(Op* op_ptr) {
    if (erased_.count(op_ptr)) return;
    Op& op = *op_ptr;
    ResolvedOp r = resolveOp(op.type);
    if (r && r.spelling->dialect != Dialect::Pir) return;
    if (!r) fail(op, "is not in the op catalogue (docs/ops.md): it has no legacy spelling");
    const OpDef& def = *r.def;
    // Program inputs are declared vars in a legacy program; constants and vectors go with the ops
    // that read them (cleanUp).
    if (&def == &opDef("parameter") || &def == &opDef("data")) {
      for (Var* v : outputVars(op)) v->persistable |= &def == &opDef("parameter");
      return block_.eraseOp(&op);
    }
    if (def.has(trait::Constant) || &def == &opDef("combine") || &def == &opDef("vector_slice") || &def == &opDef("vector_split")) return;
    if (&def == &opDef("split_with_num")) return translateSplit(op);
    translateOp(op, r);
  }

  // Constants whose readers are now legacy attributes, vectors whose parts are now slots, and the
  // vars only the translation made: gone, as they were before translateToPir. A constant a legacy
  // op reads as a tensor becomes its legacy op (pd_op.full -> fill_constant).
  void cleanUp() {
    std::vector<Op*> ops;
    for (Op& op : block_.ops) ops.push_back(&op);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      ResolvedOp r = resolveOp((*it)->type);
      if (!r || r.spelling->dialect != Dialect::Pir) continue;
      std::vector<Var*> made = outputVars(**it);
      bool read = false;
      for (Var* v : made) read |= !v->readers.empty();
      if (read && !(r.def->has(trait::Constant) && legacySpelling(**it, r)))
        fail(**it, "feeds an op that is not a legacy attribute or slot: it has no legacy form");
      if (read) {
        translateOp(**it, r);
        continue;
      }
      block_.eraseOp(*it);
      for (Var* v : made) removeIfUnused(v);
    }
    for (Var* v : dropped_) removeIfUnused(v);
  }

 private:
  void translateOp(Op& op, ResolvedOp r) {
    const OpDef& def = *r.def;
    const Spelling* spelling = legacySpelling(op, r);
    if (!spelling) fail(op, "has no legacy spelling in the op catalogue (docs/ops.md)");
    OpView pir(op, r);
    std::unordered_map<std::string, std::vector<Var*>> kept = keptSlots(op);
    NewOp n(block_, def, *spelling);
    for (const OperandDef& o : def.inputs) addValues(op, pir, o, true, kept, n);
    for (const OperandDef& o : def.outputs) addValues(op, pir, o, false, kept, n);
    copyAttrs(op, pir, def, *spelling, n);
    if (op.hasDistAttr()) n.copyDistAttr(op.dist_attr);
    n.insertBefore(op);
    block_.eraseOp(&op);
  }

  [[noreturn]] void fail(const Op& op, const std::string& why) {
    throw InputError(job_.path, opPointer(op), std::string(op.type) + " " + why);
  }

  // An all-reduce's legacy spelling names its reduction (c_allreduce_max).
  const Spelling* legacySpelling(const Op& op, ResolvedOp r) const {
    std::optional<ReduceOp> reduce = r.spelling->reduce;
    if (auto t = op.attrs.getInt("reduce_type")) reduce = static_cast<ReduceOp>(*t);
    const Spelling* plain = nullptr;
    for (const Spelling& s : r.def->spellings) {
      if (s.dialect != Dialect::Legacy || s.inplace) continue;
      if (!s.reduce) plain = plain ? plain : &s;
      else if (s.reduce == reduce.value_or(ReduceOp::Sum)) return &s;
    }
    return plain;
  }

  std::unordered_map<std::string, std::vector<Var*>> keptSlots(const Op& op) {
    std::unordered_map<std::string, std::vector<Var*>> kept;
    const std::string_view* raw = op.attrs.find(kLegacySlotsAttr);
    if (!raw) return kept;
    auto entries = rawToStringArray(*raw);
    if (!entries) fail(op, std::string("attribute ") + kLegacySlotsAttr + " is not a list of strings");
    for (const std::string& e : *entries) {
      size_t eq = e.find('=');
      if (eq == std::string::npos) fail(op, std::string(kLegacySlotsAttr) + " entry \"" + e + "\" is not SLOT=VARS");
      std::vector<Var*>& vars = kept[e.substr(0, eq)];
      for (size_t at = eq + 1; at < e.size();) {
        size_t comma = std::min(e.find(',', at), e.size());
        std::string name = e.substr(at, comma - at);
        Var* v = block_.lookup(name);
        // A PIR file declares only values: a shape record is made again under its name.
        if (!v && e.compare(0, eq, "XShape") == 0) v = shapeRecord(op, name);
        if (!v) fail(op, std::string(kLegacySlotsAttr) + " names var \"" + name + "\", which is not declared");
        vars.push_back(v);
        at = comma + 1;
      }
    }
    return kept;
  }

  void addValues(const Op& op, const OpView& pir, const OperandDef& o, bool input,
                 const std::unordered_map<std::string, std::vector<Var*>>& kept, NewOp& n) {
    if (auto k = kept.find(std::string(o.name)); k != kept.end()) {
      if (!k->second.empty()) input ? n.input(o.name, k->second) : n.output(o.name, k->second);
      else if (Var* unused = pir.out(o.name)) dropped_.push_back(unused);
      return;
    }
    if (o.pir < 0) {
      if (o.required && o.name == "XShape") n.input(o.name, {shapeRecord(op, "")});
      return;
    }
    // The shape record translateToPir passed where PIR reads only a shape (squeeze_grad's x): the
    // legacy op has it as its XShape alone.
    if (auto rec = kept.find("XShape"); input && !o.reads_buffer && rec != kept.end() && rec->second.size() == 1 &&
                                        pir.in(o.name) == rec->second.front())
      return;
    const Slot* s = input ? pir.input(o.name) : pir.output(o.name);
    if (!s || s->args.empty() || !s->args.front().var) return;
    std::vector<Var*> vars;
    for (const Arg& a : s->args) vars.push_back(a.var);
    if (input && vars.size() == 1) vars = partsOf(vars.front());
    if (!input && vars.size() == 1 && o.vector) vars = splitResults(op, vars.front());
    else if (!input && vars.size() == 1 && pir.has(trait::VectorResult)) vars = slicedParts(op, vars.front());
    input ? n.input(o.name, vars) : n.output(o.name, vars);
  }

  // A vector result (stack_grad's X@GRAD) is the slot of the vars its builtin.slice readers give,
  // one for each part; the slices go.
  std::vector<Var*> slicedParts(const Op& op, Var* vec) {
    int64_t k = vec->shape.size() == 1 ? vec->shape[0] : -1;
    if (k <= 0) fail(op, "has a vector result \"" + std::string(vec->name) + "\" that is not declared [k]");
    std::vector<Var*> parts(size_t(k), nullptr);
    std::vector<Op*> slices;
    for (Op* reader : vec->readers) {
      if (!isA(*reader, opDef("vector_slice"))) fail(op, "has a reader that is not builtin.slice: the legacy op has no vector");
      int64_t i = OpView(*reader).attrs.getInt("index").value_or(-1);
      if (i < 0 || i >= k || parts[size_t(i)]) fail(*reader, "slices index " + std::to_string(i) + " of a vector of " + std::to_string(k));
      parts[size_t(i)] = OpView(*reader).out("Out");
      slices.push_back(reader);
    }
    for (int64_t i = 0; i < k; ++i)
      if (!parts[size_t(i)]) fail(op, "has no builtin.slice of part " + std::to_string(i) + ": the legacy op writes every part");
    for (Op* slice : slices) {
      erased_.insert(slice);
      block_.eraseOp(slice);
    }
    dropped_.push_back(vec);
    return parts;
  }

  // A Tensor[] result (check_finite_and_unscale_'s out) is the slot of the vars its builtin.split
  // gives; the split goes.
  std::vector<Var*> splitResults(const Op& op, Var* vec) {
    if (vec->readers.size() != 1 || !isA(*vec->readers.front(), opDef("vector_split")))
      fail(op, "has a vector result \"" + std::string(vec->name) + "\" not read by one builtin.split: the legacy op has no vector");
    Op* split = vec->readers.front();
    std::vector<Var*> parts;
    for (const Slot& s : split->outputs)
      for (const Arg& a : s.args) parts.push_back(a.var);
    erased_.insert(split);
    block_.eraseOp(split);
    dropped_.push_back(vec);
    return parts;
  }

  // A builtin.combine's vector is the slot of several vars it was made from.
  std::vector<Var*> partsOf(Var* v) const {
    if (v->writers.size() != 1 || !isA(*v->writers.front(), opDef("combine"))) return {v};
    std::vector<Var*> parts;
    for (const Slot& s : v->writers.front()->inputs)
      for (const Arg& a : s.args) parts.push_back(a.var);
    return parts;
  }

  // An XShape ([0, ...X dims]) where PIR has none, shaped by the op's X (forward) or X@GRAD
  // (grad); named `name`, or after that var.
  Var* shapeRecord(const Op& op, const std::string& name) {
    OpView pir(op);
    const Var* like = pir.in("X") ? pir.in("X") : pir.out("X@GRAD");
    if (!like) fail(op, "needs an XShape and has no X or X@GRAD to shape it by");
    std::vector<int64_t> dims{0};
    dims.insert(dims.end(), like->shape.begin(), like->shape.end());
    std::vector<int64_t> mapping;  // the leading 0 is not sharded
    if (std::vector<int64_t> m = like->dimsMapping(); !m.empty()) {
      mapping.push_back(-1);
      mapping.insert(mapping.end(), m.begin(), m.end());
    }
    Var* made = builder_.freshVar(name.empty() ? std::string(like->name) + ".xshape" : name, dims, like->dtype, like, mapping);
    // Declared after the op's result, where Paddle (and a legacy program sent through PIR) has it.
    const Var* after = pir.out("Out") ? pir.out("Out") : like;
    if (after->block == &block_) placed_after_[after].push_back(made);
    return made;
  }

 public:
  // Moves each shape record made to just after its anchor var, in one pass over the block's vars.
  void placeShapeRecords() {
    if (placed_after_.empty()) return;
    std::unordered_set<const Var*> moved;
    for (const auto& [anchor, records] : placed_after_) moved.insert(records.begin(), records.end());
    std::vector<std::unique_ptr<Var>> order;
    order.reserve(block_.vars.size());
    std::unordered_map<const Var*, std::unique_ptr<Var>> held;
    for (auto& v : block_.vars)
      if (moved.count(v.get())) held.emplace(v.get(), std::move(v));
    for (auto& v : block_.vars) {
      if (!v) continue;
      const Var* anchor = v.get();
      order.push_back(std::move(v));
      if (auto it = placed_after_.find(anchor); it != placed_after_.end())
        for (Var* r : it->second) order.push_back(std::move(held.at(r)));
    }
    block_.vars = std::move(order);
    placed_after_.clear();
  }

 private:
  std::unordered_map<const Var*, std::vector<Var*>> placed_after_;  // shape records by anchor

  // Constant operands first (where legacy programs write them, e.g. reduce_sum's dim), then the
  // op's own attributes in their order with legacy names.
  void copyAttrs(const Op& op, const OpView& pir, const OpDef& def, const Spelling& spelling, NewOp& n) {
    for (const AttrDef& a : def.attrs) {
      if (a.pir_operand < 0 || op.attrs.has(a.name)) continue;
      const std::string_view* raw = pir.attrRaw(a.name);
      if (!raw) continue;
      if (a.kind == AttrKind::Ints) n.attrRaw(a.name, intArrayToRaw(rawToIntsLenient(*raw).value_or(std::vector<int64_t>{})));
      else if (a.kind == AttrKind::Int) n.attrInt(a.name, rawToIntLenient(*raw).value_or(0));
      else n.attrRaw(a.name, *raw);
    }
    for (const Member& m : op.attrs.items()) {
      if (m.key == kLegacySlotsAttr || (m.key == "reduce_type" && spelling.reduce)) continue;
      const AttrDef* a = nullptr;
      for (const AttrDef& d : def.attrs)
        if (d.pir_name == m.key || (d.pir_name.empty() && d.name == m.key)) a = &d;
      n.attrRaw(a ? a->name : m.key, m.raw);
    }
  }

  // pd_op.split_with_num + its builtin.slice readers -> split with Out = the slices' results.
  void translateSplit(Op& op) {
    OpView pir(op);
    Var* vec = pir.out("Out");
    int64_t num = pir.attrs.getInt("num").value_or(0);
    if (!vec || num <= 0) fail(op, "has no result vector or no num");
    std::vector<Var*> parts(size_t(num), nullptr);
    std::vector<Op*> slices;
    for (Op* reader : vec->readers) {
      if (!isA(*reader, opDef("vector_slice"))) fail(op, "has a reader that is not builtin.slice: legacy split has no vector");
      OpView slice(*reader);
      int64_t i = slice.attrs.getInt("index").value_or(-1);
      if (i < 0 || i >= num || parts[size_t(i)]) fail(*reader, "slices index " + std::to_string(i) + " of a split into " + std::to_string(num));
      parts[size_t(i)] = slice.out("Out");
      slices.push_back(reader);
    }
    Var* x = pir.in("X");
    for (size_t i = 0; i < parts.size(); ++i)
      if (!parts[i]) {
        std::vector<int64_t> dims = x->shape;
        int64_t axis = pir.attrs.getInt("axis").value_or(0);
        if (axis < 0) axis += int64_t(dims.size());
        if (axis >= 0 && axis < int64_t(dims.size()) && dims[size_t(axis)] > 0) dims[size_t(axis)] /= num;
        parts[i] = builder_.freshVar(std::string(x->name) + ".part" + std::to_string(i), dims, x->dtype, x);
      }
    NewOp s = builder_.create(opDef("split"));
    s.input("X", {x}).output("Out", parts).attrInt("axis", pir.attrs.getInt("axis").value_or(0));
    for (const Member& m : op.attrs.items()) s.attrRaw(m.key, m.raw);
    if (op.hasDistAttr()) s.copyDistAttr(op.dist_attr);
    s.insertBefore(op);
    for (Op* slice : slices) {
      erased_.insert(slice);
      block_.eraseOp(slice);
    }
    block_.eraseOp(&op);
    dropped_.push_back(vec);
  }

  static std::vector<Var*> outputVars(const Op& op) {
    std::vector<Var*> vars;
    for (const Slot& s : op.outputs)
      for (const Arg& a : s.args)
        if (a.var) vars.push_back(a.var);
    return vars;
  }

  void removeIfUnused(Var* v) {
    if (!v->removed && v->readers.empty() && v->writers.empty() && !v->persistable) block_.removeVar(v);
  }

  Block& block_;
  OpBuilder builder_;
  Job& job_;
  std::vector<Var*> dropped_;  // results and vectors legacy ops do without
  std::unordered_set<const Op*> erased_;  // slices erased with their split, before their turn
};

}  // namespace

void translateToLegacy(Job& job) {
  for (auto& p : job.programs) {
    if (p->dialect != Dialect::Pir) continue;
    p->dialect = Dialect::Legacy;  // the builder writes the program's dialect
    for (auto& b : p->blocks) {
      std::vector<Op*> ops;
      for (Op& op : b->ops) ops.push_back(&op);
      LegacyTranslator t(*b);
      for (Op* op : ops) t.translate(op);
      t.cleanUp();
      t.placeShapeRecords();
    }
  }
}

}  // namespace spopt
