#include "ir/ir.h"

#include <algorithm>
#include <stdexcept>

#include "ir/json_text.h"
#include "support/checked_size.h"
#include <limits>

namespace spopt {

namespace {
constexpr std::string_view kDTypeNames[] = {"float32", "float64", "float16", "bfloat16",
                                            "int32",   "int64",   "bool",    "uint8"};
constexpr size_t kDTypeSizes[] = {4, 8, 2, 2, 4, 8, 1, 1};

void unlink(OpList& list, const Op* op) {
  auto it = std::find(list.begin(), list.end(), op);
  if (it != list.end()) {
    *it = list.back();
    list.pop_back();
  }
}
}  // namespace

std::optional<DType> parseDType(std::string_view s) {
  for (size_t i = 0; i < std::size(kDTypeNames); ++i)
    if (kDTypeNames[i] == s) return static_cast<DType>(i);
  return std::nullopt;
}
std::string_view dtypeName(DType t) { return kDTypeNames[static_cast<size_t>(t)]; }
size_t dtypeSize(DType t) { return kDTypeSizes[static_cast<size_t>(t)]; }

const std::vector<Field>& Fields::items() const {
  static const std::vector<Field> kNone;
  return shared_ ? *shared_ : own_ ? *own_ : kNone;
}

std::vector<Field>& Fields::mutableItems() {
  if (!own_) own_ = std::make_unique<std::vector<Field>>(shared_ ? *shared_ : std::vector<Field>{});
  shared_ = nullptr;
  return *own_;
}

bool hasField(const Fields& f, std::string_view key) {
  for (const auto& x : f)
    if (x.key == key) return true;
  return false;
}
namespace {
// The layouts of the ops the passes build (makeOp), without and with a dist_attr: shared, not
// one list per op.
const std::vector<Field> kBuiltOp{{"type", {}}, {"inputs", {}}, {"outputs", {}}, {"attrs", {}}};
const std::vector<Field> kBuiltOpWithDist{{"type", {}}, {"inputs", {}}, {"outputs", {}}, {"attrs", {}}, {"dist_attr", {}}};
}  // namespace

void ensureField(Fields& f, std::string_view key) {
  if (hasField(f, key)) return;
  if (&f.items() == &kBuiltOp && key == "dist_attr") f = Fields(&kBuiltOpWithDist);
  else f.push_back({key, {}});
}
void dropField(Fields& f, std::string_view key) {
  if (!hasField(f, key)) return;
  auto& v = f.mutableItems();
  v.erase(std::remove_if(v.begin(), v.end(), [&](const Field& x) { return x.key == key; }), v.end());
}

const std::vector<Field>* Job::internLayout(const std::vector<Field>& fields) {
  // Consecutive entities usually share a layout: compare with the last one before hashing.
  auto same = [&](const std::vector<Field>* l) {
    if (!l || l->size() != fields.size()) return false;
    for (size_t i = 0; i < fields.size(); ++i)
      if ((*l)[i].key != fields[i].key) return false;
    return true;
  };
  if (same(last_layout_)) return last_layout_;
  std::string sig;
  for (const auto& f : fields) {
    sig += f.key;
    sig += '\0';
  }
  auto& slot = layouts_[sig];
  if (!slot) {
    slot = std::make_unique<std::vector<Field>>(fields);
    for (Field& f : *slot) f.key = arena.store(f.key);  // not a view into the loaded file
  }
  last_layout_ = slot.get();
  return slot.get();
}

int64_t Var::numel() const {
  for (int64_t d : shape)
    if (d < 0) return -1;
  auto n = checkedNumel(shape);
  return n ? *n : std::numeric_limits<int64_t>::max();
}

std::optional<int64_t> Var::byteSize() const { return checkedBytes(shape, dtypeSize(dtype)); }

std::vector<int64_t> Var::dimsMapping() const {
  if (!hasDistAttr()) return {};
  return dist_attr.getIntArray("dims_mapping").value_or(std::vector<int64_t>{});
}

const Slot* Op::input(std::string_view slot) const {
  for (const auto& s : inputs)
    if (s.name == slot) return &s;
  return nullptr;
}
const Slot* Op::output(std::string_view slot) const {
  for (const auto& s : outputs)
    if (s.name == slot) return &s;
  return nullptr;
}
Var* Op::in(std::string_view slot, size_t i) const {
  const Slot* s = input(slot);
  return s && i < s->args.size() ? s->args[i].var : nullptr;
}
Var* Op::out(std::string_view slot, size_t i) const {
  const Slot* s = output(slot);
  return s && i < s->args.size() ? s->args[i].var : nullptr;
}
size_t Op::inputCount(std::string_view slot) const {
  const Slot* s = input(slot);
  return s ? s->args.size() : 0;
}
size_t Op::outputCount(std::string_view slot) const {
  const Slot* s = output(slot);
  return s ? s->args.size() : 0;
}

std::string Op::executionStream() const {
  if (!hasDistAttr()) return "default";
  auto s = dist_attr.getString("execution_stream");
  return s && !s->empty() ? *s : std::string("default");
}

Var* Block::findLocal(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() || it->second->removed ? nullptr : it->second;
}

Var* Block::lookup(std::string_view name) const {
  // Depth-bounded walk: the verifier rejects parent cycles, this guards against them anyway.
  const Block* b = this;
  for (int depth = 0; b && depth < 10000; ++depth, b = b->parent)
    if (Var* v = b->findLocal(name)) return v;
  return nullptr;
}

namespace {
// The calling thread's ThreadEdits, if any.
struct ThreadEditTarget {
  const Job* job = nullptr;
  Arena* arena = nullptr;
  EditJournal* journal = nullptr;
};
thread_local ThreadEditTarget t_edits;

EditJournal* journalOf(const Block* b) {
  if (!b || !b->program || !b->program->job) return nullptr;
  const Job* job = b->program->job;
  return t_edits.job == job ? t_edits.journal : job->journal;
}
}  // namespace

Arena& Job::editArena() { return t_edits.job == this ? *t_edits.arena : arena; }

ThreadEdits::ThreadEdits(Job& job, Arena& arena, EditJournal* journal) {
  if (t_edits.job) throw std::logic_error("ThreadEdits: this thread already edits a job on its own");
  t_edits = {&job, &arena, job.journal ? journal : nullptr};
}
ThreadEdits::~ThreadEdits() { t_edits = {}; }

void EditJournal::append(EditJournal&& later) {
  ops.insert(ops.end(), later.ops.begin(), later.ops.end());
  execution.insert(execution.end(), later.execution.begin(), later.execution.end());
  moved.insert(moved.end(), later.moved.begin(), later.moved.end());
  // An op `later` inserted at an address erased here is alive (Block::insertOp's rule).
  for (const Op* op : later.ops) erased.erase(op);
  erased.insert(later.erased.begin(), later.erased.end());
  erased_rings.insert(erased_rings.end(), later.erased_rings.begin(), later.erased_rings.end());
  vars.insert(vars.end(), later.vars.begin(), later.vars.end());
}

void journalOp(Op& op) {
  if (EditJournal* j = journalOf(op.block)) j->ops.push_back(&op);
}

void journalExecutionAttrs(Op& op) {
  if (EditJournal* j = journalOf(op.block)) j->execution.push_back(&op);
}

Var* Block::addVarIfNew(Var v) {
  auto [it, fresh] = by_name_.try_emplace(v.name, nullptr);
  if (!fresh && !it->second->removed) return nullptr;
  auto owned = std::make_unique<Var>(std::move(v));
  owned->block = this;
  owned->id = program->next_var_id++;
  it->second = owned.get();
  vars.push_back(std::move(owned));
  if (EditJournal* j = journalOf(this)) j->vars.push_back(it->second);
  return it->second;
}

Var* Block::addVar(Var v) {
  auto owned = std::make_unique<Var>(std::move(v));
  owned->block = this;
  owned->id = program->next_var_id++;
  Var* raw = owned.get();
  by_name_[raw->name] = raw;
  vars.push_back(std::move(owned));
  if (EditJournal* j = journalOf(this)) j->vars.push_back(raw);
  return raw;
}

void Block::removeVar(Var* v) {
  if (!v->readers.empty() || !v->writers.empty())
    throw std::logic_error("removeVar: var '" + std::string(v->name) + "' is still used");
  // The name stays in by_name_, pointing at the removed var (vars are never freed): lookups skip
  // it and a new var of the name takes its entry. A pass that fuses thousands of collectives
  // removes their results; erasing each from the index was a third of its rewrite.
  v->removed = true;
  if (EditJournal* j = journalOf(this)) j->vars.push_back(v);
}

void Block::renameVar(Var* v, std::string_view name) {
  if (auto it = by_name_.find(v->name); it != by_name_.end() && it->second == v) by_name_.erase(it);
  for (const OpList* users : {&v->readers, &v->writers})
    for (Op* op : *users)
      for (std::vector<Slot>* slots : {&op->inputs, &op->outputs})
        for (Slot& s : *slots)
          for (Arg& a : s.args)
            if (a.var == v) a.name = name;
  for (std::string_view& f : program->fetch)
    if (f == v->name && position == 0) f = name;  // fetch names block 0's vars
  v->name = name;
  by_name_[name] = v;
  if (EditJournal* j = journalOf(this)) j->vars.push_back(v);
}

Op* Block::insertOp(OpIter pos, Op op) {
  op.block = this;
  op.id = program->next_op_id++;
  auto it = ops.insert(pos, std::move(op));
  positions_dirty_ = true;
  ++size_change_;
  Op* o = &*it;
  o->self = it;
  o->cached_index = kUnnumbered;
  for (auto* slots : {&o->inputs, &o->outputs}) {
    for (auto& s : *slots) {
      for (auto& a : s.args) {
        if (!a.var) a.var = lookup(a.name);
        if (!a.var) throw std::logic_error("insertOp: var '" + std::string(a.name) + "' is not declared");
        (slots == &o->inputs ? a.var->readers : a.var->writers).push_back(o);
      }
    }
  }
  if (EditJournal* j = journalOf(this)) {
    j->ops.push_back(o);
    j->erased.erase(o);
  }
  return o;
}

void Block::eraseOp(Op* op) {
  if (EditJournal* j = journalOf(this)) {
    j->erased.insert(op);
    if (auto ring = op->attrs.getInt("ring_id")) j->erased_rings.push_back(*ring);
  }
  for (auto& s : op->inputs)
    for (auto& a : s.args)
      if (a.var) unlink(a.var->readers, op);
  for (auto& s : op->outputs)
    for (auto& a : s.args)
      if (a.var) unlink(a.var->writers, op);
  unnumber(op);
  --size_change_;
  ops.erase(op->self);
}

void Block::moveOp(Op* op, OpIter pos) {
  if (op->block != this) throw std::logic_error("moveOp: op " + std::string(op->type) + " is not in this block");
  if (pos == op->self) return;
  ops.splice(pos, ops, op->self);  // iterators and addresses stay valid
  if (EditJournal* j = journalOf(this)) j->moved.push_back(op);
  unnumber(op);
}

void Block::unnumber(Op* op) {
  if (op->cached_index < order_.size() && order_[op->cached_index] == op) order_[op->cached_index] = nullptr;
  op->cached_index = kUnnumbered;
  positions_dirty_ = true;
}

Op& Block::appendOp() {
  const bool known = !positions_dirty_ && positions_size_ == ops.size();
  Op& op = ops.emplace_back();
  op.self = std::prev(ops.end());
  op.block = this;
  op.id = program->next_op_id++;
  if (known) {
    op.cached_index = uint32_t(order_.size());
    order_.push_back(&op);
    positions_size_ = ops.size();
  } else {
    positions_dirty_ = renumber_all_ = true;  // the list was edited directly before: number it all
  }
  return op;
}

void Block::reorderRun(std::span<Op* const> run, std::span<Op* const> order) {
  size_t first = 0, last = order.size();
  while (first < last && run[first] == order[first]) ++first;
  while (last > first && run[last - 1] == order[last - 1]) --last;
  if (first == last) return;
  knowPositions();  // before the moves: the list still in its old order
  const uint32_t base = run[first]->cached_index;
  bool contiguous = true;
  for (size_t i = first; i < last && contiguous; ++i) contiguous = run[i]->cached_index == base + (i - first);
  OpIter before = last < run.size() ? run[last]->self : std::next(run.back()->self);
  for (size_t i = first; i < last; ++i) moveOp(order[i], before);
  if (!contiguous) return;  // not a run of this block: the next query renumbers
  for (size_t i = first; i < last; ++i) {
    order[i]->cached_index = uint32_t(base + (i - first));
    order_[base + (i - first)] = order[i];
  }
  positions_dirty_ = false;
}

void Block::renumber() const {
  auto& list = const_cast<std::list<Op>&>(ops);  // the array hands out the ops as the list does
  std::vector<Op*> fresh;
  fresh.reserve(ops.size());
  auto takeUntil = [&](OpIter from, const Op* stop) {  // the list from `from` up to `stop` (null: the end)
    for (; from != list.end() && &*from != stop; ++from) fresh.push_back(&*from);
  };
  if (renumber_all_ || int64_t(positions_size_) + size_change_ != int64_t(ops.size())) {
    takeUntil(list.begin(), nullptr);
  } else {
    // The ops still numbered keep their order among themselves (an edit moves only the op it
    // names), so between two of them the list holds only ops inserted or moved since.
    const Op* prev = nullptr;
    for (Op* op : order_) {
      if (!op) continue;
      if (!prev) takeUntil(list.begin(), op);
      else if (OpIter after = std::next(prev->self); after == list.end() || &*after != op) takeUntil(after, op);
      fresh.push_back(op);
      prev = op;
    }
    takeUntil(prev ? std::next(prev->self) : list.begin(), nullptr);
  }
  for (uint32_t i = 0; i < fresh.size(); ++i) fresh[i]->cached_index = i;
  order_ = std::move(fresh);
  positions_size_ = ops.size();
  positions_dirty_ = renumber_all_ = false;
  size_change_ = 0;
}

size_t Block::indexOf(const Op* op) const {
  knowPositions();
  return op->cached_index;
}

bool Block::isBefore(const Op* a, const Op* b) const { return indexOf(a) < indexOf(b); }

Block* Program::block(int64_t idx) const {
  for (const auto& b : blocks)
    if (b->idx == idx) return b.get();
  return nullptr;
}

bool Program::fetches(std::string_view name) const {
  return std::find(fetch.begin(), fetch.end(), name) != fetch.end();
}

int ProcessGroup::positionOf(int64_t rank) const {
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == rank) return static_cast<int>(i);
  return -1;
}

const ProcessGroup* Job::group(int64_t ring_id) const {
  auto it = group_by_ring_.find(ring_id);
  return it == group_by_ring_.end() ? nullptr : &groups[it->second];
}

Program* Job::program(int64_t rank) const {
  auto it = program_by_rank_.find(rank);
  return it == program_by_rank_.end() ? nullptr : programs[it->second].get();
}

void Job::rebuildIndices() {
  group_by_ring_.clear();
  program_by_rank_.clear();
  for (size_t i = 0; i < groups.size(); ++i) group_by_ring_.emplace(groups[i].ring_id, i);
  for (size_t i = 0; i < programs.size(); ++i) {
    programs[i]->position = i;
    programs[i]->job = this;
    program_by_rank_.emplace(programs[i]->rank, i);
  }
}

namespace {
void pointArg(Op& op, std::vector<Slot>& slots, std::string_view slot, size_t i, Var* to, OpList Var::*users,
              const char* what) {
  for (auto& s : slots) {
    if (s.name != slot || i >= s.args.size()) continue;
    Arg& a = s.args[i];
    if (a.var) unlink(a.var->*users, &op);
    a.var = to;
    a.name = to->name;
    (to->*users).push_back(&op);
    journalOp(op);
    return;
  }
  throw std::logic_error(std::string(what) + ": op " + std::string(op.type) + " has no slot " + std::string(slot));
}
}  // namespace

void setInputArg(Op& op, std::string_view slot, size_t i, Var* to) {
  pointArg(op, op.inputs, slot, i, to, &Var::readers, "setInputArg");
}
void setOutputArg(Op& op, std::string_view slot, size_t i, Var* to) {
  pointArg(op, op.outputs, slot, i, to, &Var::writers, "setOutputArg");
}

size_t replaceAllUses(Var* from, Var* to) {
  OpList readers = from->readers;  // copy: the list shrinks as we go
  size_t changed = 0;
  std::sort(readers.begin(), readers.end());
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  for (Op* op : readers) {
    for (auto& s : op->inputs) {
      for (auto& a : s.args) {
        if (a.var != from) continue;
        unlink(from->readers, op);
        a.var = to;
        a.name = to->name;
        to->readers.push_back(op);
        journalOp(*op);
        ++changed;
      }
    }
  }
  return changed;
}

Op makeOp(Job& job, std::string_view type) {
  Op op;
  op.type = job.editArena().store(type);
  op.fields = Fields(&kBuiltOp);
  return op;
}

static void addSlot(std::vector<Slot>& slots, Job& job, std::string_view slot,
                    std::vector<std::string_view> names) {
  Slot s{job.editArena().store(slot), {}};
  for (auto n : names) s.args.push_back({job.editArena().store(n), nullptr});
  slots.push_back(std::move(s));
}
void addInput(Op& op, Job& job, std::string_view slot, std::vector<std::string_view> names) {
  addSlot(op.inputs, job, slot, std::move(names));
}
void addOutput(Op& op, Job& job, std::string_view slot, std::vector<std::string_view> names) {
  addSlot(op.outputs, job, slot, std::move(names));
}

std::string_view dialectName(Dialect d) {
  switch (d) {
    case Dialect::Legacy: return "legacy";
    case Dialect::Current: return "current";
    case Dialect::Pir: return "pir";
  }
  return "?";
}

std::optional<Dialect> parseDialect(std::string_view name) {
  if (name == "legacy") return Dialect::Legacy;
  if (name == "current") return Dialect::Current;
  if (name == "pir") return Dialect::Pir;
  return std::nullopt;
}

}  // namespace spopt
