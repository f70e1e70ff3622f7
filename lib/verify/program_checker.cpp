#include "verify/program_checker.h"

#include "analysis/p2p.h"
#include "ir/json_pointer.h"
#include "ir/json_text.h"
#include "ops/op_def.h"
#include "ops/op_verify.h"
#include "ops/shape_math.h"
#include "support/checked_size.h"
#include "verify/p2p_check.h"

namespace spopt {
namespace {

bool shapeKnown(const Var* v) {
  if (!v) return false;
  for (auto d : v->shape)
    if (d < 0) return false;
  return true;
}

// Declared in this block or an ancestor (the loader resolved names; passes must keep that true).
bool inScope(const Var* v, const Block& b) {
  for (const Block* x = &b; x; x = x->parent)
    if (v->block == x) return true;
  return false;
}

}  // namespace

IssuedCollective::IssuedCollective(const Op& o, const Collective& coll) : op(&o), c(coll) {
  if (const Var* x = o.in(coll.in_slot)) has_input = true, dtype = x->dtype, numel = x->numel();
}

void ProgramChecker::report(std::string pointer, std::string message) {
  if (problems.size() < opts_.max_problems) problems.push_back({job_.path, std::move(pointer), std::move(message)});
}

void ProgramChecker::checkProgram(bool blocks) {
  std::set<int64_t> idxs;
  for (size_t bi = 0; bi < program_.blocks.size(); ++bi) {
    const Block& b = *program_.blocks[bi];
    if (b.idx < 0) report(blockPointer(program_.position, b.position) + "/idx", "block idx " + std::to_string(b.idx) + " is negative");
    else if (!idxs.insert(b.idx).second)
      report(blockPointer(program_.position, b.position) + "/idx", "block idx " + std::to_string(b.idx) + " is used twice");
    if (blocks) checkBlock(b, bi);
  }
  const Block* global = program_.blocks.empty() ? nullptr : program_.blocks.front().get();
  for (size_t i = 0; i < program_.fetch.size(); ++i)
    if (!global || !global->lookup(program_.fetch[i]))
      report(programPointer(program_.position) + "/fetch/" + std::to_string(i),
             "fetched var \"" + std::string(program_.fetch[i]) + "\" is not declared in the first block");
}

void ProgramChecker::checkBlock(const Block& b, size_t block_index) {
  for (size_t vi = 0; vi < b.vars.size(); ++vi)
    if (const Var& v = *b.vars[vi]; !v.removed) {
      checkVar(v);
      if (v.hasDistAttr()) sharded.push_back({block_index, vi, &v});
    }
  for (const Op& op : b.inOrder()) {
    if (full()) return;  // messages walk the block: stay linear
    checkOp(op, true);
  }
}

void ProgramChecker::checkVar(const Var& v) {
  checkVarSize(v);
  if (v.hasDistAttr() && !checkReserved(v.dist_attr, KeyOwner::VarDistAttr, &v, nullptr)) return;
  checkSharding(v);
}

// Whether `obj`, the dist_attr of `var` or of `op`, holds each reserved key's kind of value
// (reserved_keys.h); reports the first that does not.
bool ProgramChecker::checkReserved(const JsonObject& obj, KeyOwner owner, const Var* var, const Op* op) {
  const std::optional<KindProblem> p = reserved_.check(obj, owner);
  if (p) report((var ? varPointer(*var) : opPointer(*op)) + "/dist_attr" + p->pointer, p->message);
  return !p;
}

void ProgramChecker::checkExecution(const Op& op) {
  if (op.hasDistAttr()) checkReserved(op.dist_attr, KeyOwner::OpDistAttr, nullptr, &op);
}

// Every byte size replay, the analyses and the memory budget compute must fit int64
// (support/checked_size.h): a wrapped size allocates a small buffer that kernels overrun.
void ProgramChecker::checkVarSize(const Var& v) {
  if (!shapeKnown(&v) || v.byteSize()) return;
  auto n = checkedNumel(v.shape);
  std::string why = n ? std::to_string(*n) + " elements x " + std::to_string(dtypeSize(v.dtype)) + " bytes overflow int64"
                      : "its element count overflows int64";
  report(varPointer(v) + "/shape", "var \"" + std::string(v.name) + "\" " + typeText(v) + ": " + why);
}

// Replay slices a sharded program input by its dims_mapping and mesh (runtime/inputs.cpp): the
// same parse, checked here (verify/sharding.h).
void ProgramChecker::checkSharding(const Var& v) {
  // Most vars are replicated: one cached parse says so without building their Sharding.
  if (!v.hasDistAttr() || !shardings_.of(v.dist_attr).sharded) return;
  std::string problem;
  auto s = varSharding(v, &problem, &shardings_);
  if (!problem.empty()) return report(varPointer(v) + "/dist_attr", problem);
  if (!s) return;
  for (int64_t id : s->process_ids)
    if (id == program_.rank) return;
  report(varPointer(v) + "/dist_attr/process_mesh",
         "var \"" + std::string(v.name) + "\" is sharded over a mesh without rank " + std::to_string(program_.rank) + ", whose program declares it");
}

void ProgramChecker::checkOp(const Op& op, bool note_issue) {
  const Block& b = *op.block;
  // Op attrs rarely share a text (each op's own values): checked directly, not through the cache.
  if (auto p = checkReservedKeys(op.attrs, KeyOwner::OpAttrs)) report(opPointer(op) + "/attrs" + p->pointer, p->message);
  checkExecution(op);
  bool resolved = true;
  for (int dir = 0; dir < 2; ++dir) {
    const auto& slots = dir == 0 ? op.inputs : op.outputs;
    for (const auto& s : slots) {
      for (size_t k = 0; k < s.args.size(); ++k) {
        const Var* v = s.args[k].var;
        std::string problem;
        if (!v || v->removed || v->name != s.args[k].name || !inScope(v, b))
          problem = "var \"" + std::string(s.args[k].name) + "\" is not declared in block " + std::to_string(b.idx) + " or its ancestors";
        else if (s.args[k].var.id() != v->id)  // an edit's bug, never the file's: walks read the id the arg holds
          problem = "names var \"" + std::string(v->name) + "\" by id " + std::to_string(s.args[k].var.id()) + ", whose id is " + std::to_string(v->id);
        if (problem.empty()) continue;
        resolved = false;
        report(opPointer(op) + (dir == 0 ? "/inputs/" : "/outputs/") + pointerToken(s.name) + "/" + std::to_string(k), std::move(problem));
      }
    }
  }
  if (!resolved) return;
  if (auto c = asCollective(op)) {
    checkCollective(op, *c);  // its rules are here
    if (note_issue && communicates(*c)) issued[c->ring_id].emplace_back(op, *c);
  } else {
    if (auto pp = asPointToPoint(op)) {
      issues_p2p = true;
      checkP2POp(job_, program_, op, *pp, opPointer(op), [this](std::string pointer, std::string message) {
        report(std::move(pointer), std::move(message));
      });
    }
    if (opts_.shapes) checkShapes(op);
  }
}

void ProgramChecker::noteIssues(const std::set<int64_t>* rings) {
  for (const auto& b : program_.blocks)
    for (const Op& op : b->inOrder()) {
      ResolvedOp r = resolveOp(op.type);
      if (!r) continue;
      issues_p2p = issues_p2p || r.def->p2p.has_value();
      if (!r.def->collective) continue;
      if (auto c = asCollective(op); c && communicates(*c) && (!rings || rings->count(c->ring_id))) issued[c->ring_id].emplace_back(op, *c);
    }
}

void ProgramChecker::checkCollective(const Op& op, const Collective& c) {
  auto ring = op.attrs.getInt("ring_id");
  if (!ring) {
    report(opPointer(op) + "/attrs/ring_id", std::string(op.type) + " needs an integer ring_id");
    return;
  }
  const ProcessGroup* g = job_.group(*ring);
  if (!g) {
    report(opPointer(op) + "/attrs/ring_id", "ring_id " + std::to_string(*ring) + " has no process group");
    return;
  }
  if (g->positionOf(program_.rank) < 0)
    report(opPointer(op) + "/attrs/ring_id", "rank " + std::to_string(program_.rank) + " is not a member of ring " + std::to_string(*ring));
  // A compute op that communicates: its own rule checks its shapes (and its ring attributes).
  if (c.kind == CollectiveKind::KernelAllReduce) {
    if (opts_.shapes) checkShapes(op);
    return;
  }
  // Rules replay relies on (runtime/rank_executor.cpp): a known reduction, a root inside the ring.
  if (c.kind == CollectiveKind::AllReduce && (int(c.reduce) < 0 || int(c.reduce) > 4))
    report(opPointer(op) + "/attrs/reduce_type", "reduce_type " + std::to_string(int(c.reduce)) + " is not one of 0..4 (SUM, MAX, MIN, PROD, AVG)");
  if (std::string root_key(collectiveRootAttr(c.kind)); !root_key.empty()) {
    auto root = op.attrs.getInt(root_key);
    if (op.attrs.find(root_key) && !root) report(opPointer(op) + "/attrs/" + root_key, root_key + " must be an integer");
    int64_t r = root.value_or(0);
    if (r < 0 || r >= int64_t(g->ranks.size()))
      report(opPointer(op) + "/attrs/" + root_key, root_key + " " + std::to_string(r) + " is not a position in ring " + std::to_string(*ring) +
                                                       " (size " + std::to_string(g->ranks.size()) + ")");
  }
  auto nranks = op.attrs.getInt("nranks");
  if (op.attrs.find("nranks") && !nranks) report(opPointer(op) + "/attrs/nranks", "nranks must be an integer");
  if (c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllGather) {
    if (nranks && *nranks != int64_t(g->ranks.size()))
      report(opPointer(op) + "/attrs/nranks",
             "nranks " + std::to_string(*nranks) + " differs from ring " + std::to_string(*ring) + "'s size " + std::to_string(g->ranks.size()));
  }
  const Var* x = op.in(c.in_slot);
  const Var* y = op.out(c.out_slot);
  if (!x || !y) {
    report(opPointer(op), std::string(op.type) + " needs input " + std::string(c.in_slot) + " and output " + std::string(c.out_slot));
    return;
  }
  if (!opts_.shapes || !shapeKnown(x) || !shapeKnown(y)) return;
  int64_t n = int64_t(g->ranks.size());
  auto mismatch = [&](const std::string& rule) {
    report(opPointer(op), std::string(op.type) + ": " + rule + ", but input is " + typeText(*x) + " and output " + typeText(*y));
  };
  if (x->dtype != y->dtype) mismatch("input and output dtypes must agree");
  else if (c.kind == CollectiveKind::ReduceScatter) {
    if (x->shape.empty() || x->shape.size() != y->shape.size() || x->shape[0] != y->shape[0] * n ||
        !std::equal(x->shape.begin() + 1, x->shape.end(), y->shape.begin() + 1))
      mismatch("output dim 0 must be input dim 0 / " + std::to_string(n));
  } else if (c.kind == CollectiveKind::AllGather) {
    if (x->shape.empty() || x->shape.size() != y->shape.size() || y->shape[0] != x->shape[0] * n ||
        !std::equal(x->shape.begin() + 1, x->shape.end(), y->shape.begin() + 1))
      mismatch("output dim 0 must be input dim 0 * " + std::to_string(n));
  } else if (x->shape != y->shape) {
    mismatch("input and output shapes must agree");
  }
}

// What replay's kernels decide from slots, attrs and declared shapes: the op's definition.
void ProgramChecker::checkShapes(const Op& op) {
  OpView view(op);
  if (auto e = checkOpDefinition(view)) report(opPointer(op) + e->where, e->message);
}

}  // namespace spopt
