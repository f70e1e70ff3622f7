#include "verify/verifier.h"

#include <set>
#include <unordered_map>

#include <absl/container/flat_hash_set.h>

#include "analysis/collectives.h"
#include "ir/json_pointer.h"
#include "ir/json_text.h"
#include "ops/op_def.h"
#include "ops/op_verify.h"
#include "ops/shape_math.h"
#include "support/checked_size.h"
#include "verify/cross_rank.h"
#include "verify/p2p_check.h"
#include "verify/sharding.h"

namespace spopt {
namespace {

std::string reduceName(ReduceOp r) {
  static const char* const kNames[] = {"SUM", "MAX", "MIN", "PROD", "AVG"};
  int i = int(r);
  return i >= 0 && i < 5 ? kNames[i] : std::to_string(i);
}

bool known(const Var* v) {
  if (!v) return false;
  for (auto d : v->shape)
    if (d < 0) return false;
  return true;
}

class Verifier {
 public:
  Verifier(const Job& job, const VerifyOptions& opts) : job_(job), opts_(opts), mesh_(job) {}

  std::vector<Diagnostic> run() {
    // Replay, the analyses and the passes all work per rank: a job of no ranks is no job.
    if (job_.programs.empty()) report("/programs", "job has no programs");
    checkGroups();
    if (opts_.touched) return runTouched(*opts_.touched);
    checkPrograms();  // feeds mesh_ as it reads each var
    for (auto& [pointer, message] : mesh_.take()) report(std::move(pointer), std::move(message));
    if (opts_.collectives && problems_.empty()) checkCollectiveOrder();
    if (opts_.collectives && problems_.empty()) checkP2PPairing(job_, reporter());
    return std::move(problems_);
  }

 private:
  const Job& job_;
  const VerifyOptions& opts_;
  std::vector<Diagnostic> problems_;
  ShardingCache shardings_;
  MeshAgreement mesh_;

  void report(std::string pointer, std::string message) {
    if (problems_.size() < opts_.max_problems) problems_.push_back({job_.path, std::move(pointer), std::move(message)});
  }
  ReportFn reporter() {
    return [this](std::string pointer, std::string message) { report(std::move(pointer), std::move(message)); };
  }
  // Positions are found by walking the block: only the (at most max_problems) messages pay it.
  std::string opPtr(const Op& op) { return opPointer(op); }

  void checkGroups() {
    std::set<int64_t> rings;
    for (size_t gi = 0; gi < job_.groups.size(); ++gi) {
      const auto& g = job_.groups[gi];
      std::string at = "/process_groups/" + std::to_string(gi);
      if (g.ring_id < 0) report(at + "/ring_id", "ring_id " + std::to_string(g.ring_id) + " is negative");
      else if (!rings.insert(g.ring_id).second) report(at + "/ring_id", "ring_id " + std::to_string(g.ring_id) + " is used by two groups");
      if (g.ranks.empty()) report(at + "/ranks", "a process group needs at least one rank");
      std::set<int64_t> seen;
      for (size_t i = 0; i < g.ranks.size(); ++i) {
        int64_t r = g.ranks[i];
        if (r < 0 || r >= job_.world_size)
          report(at + "/ranks/" + std::to_string(i), "rank " + std::to_string(r) + " is outside the world [0, " + std::to_string(job_.world_size) + ")");
        if (!seen.insert(r).second) report(at + "/ranks/" + std::to_string(i), "rank " + std::to_string(r) + " appears twice in ring " + std::to_string(g.ring_id));
      }
    }
  }

  // Every program; `blocks`: each block's vars and ops too (else only its rank, idxs and fetches).
  void checkPrograms(bool blocks = true) {
    std::set<int64_t> ranks;
    for (const auto& p : job_.programs) {
      std::string at = programPointer(p->position);
      if (p->rank < 0 || p->rank >= job_.world_size)
        report(at + "/rank", "rank " + std::to_string(p->rank) + " is outside the world [0, " + std::to_string(job_.world_size) + ")");
      if (!ranks.insert(p->rank).second) report(at + "/rank", "rank " + std::to_string(p->rank) + " has two programs");
      std::set<int64_t> idxs;
      for (size_t bi = 0; bi < p->blocks.size(); ++bi) {
        const Block& b = *p->blocks[bi];
        if (!idxs.insert(b.idx).second)
          report(blockPointer(p->position, b.position) + "/idx", "block idx " + std::to_string(b.idx) + " is used twice");
        if (blocks) checkBlock(*p, b, bi);
      }
      const Block* global = p->blocks.empty() ? nullptr : p->blocks.front().get();
      for (size_t i = 0; i < p->fetch.size(); ++i)
        if (!global || !global->lookup(p->fetch[i]))
          report(at + "/fetch/" + std::to_string(i), "fetched var \"" + std::string(p->fetch[i]) + "\" is not declared in the first block");
    }
  }

  // After a journaled pass (VerifyOptions::touched): the rules of the ops and vars it touched, the
  // mesh agreement of those vars' names across ranks, and the issue order of every ring whose
  // collectives it inserted, erased or moved (and the send/receive pairing when the job has any).
  // Ops it did not touch kept their own rules: their slots, attrs and vars are as verified before.
  std::vector<Diagnostic> runTouched(const EditJournal& j) {
    checkPrograms(false);
    absl::flat_hash_set<const Op*> ops_seen;
    absl::flat_hash_set<const Var*> vars_seen, mesh_seen;
    // A pass edits every rank alike, so a name is touched on each rank: its declarations on every
    // rank are looked up once, at its first touched var (a later one adds only itself).
    absl::flat_hash_set<std::pair<size_t, std::string_view>> names_seen;
    std::vector<const Op*> ops;
    auto touch = [&](const Op* op) {
      if (!j.erased.contains(op) && ops_seen.insert(op).second) ops.push_back(op);
    };
    for (const Op* op : j.ops) touch(op);
    for (const Var* v : j.vars) {
      if (!vars_seen.insert(v).second) continue;
      for (const OpList* users : {&v->readers, &v->writers})
        for (const Op* op : *users) touch(op);
      if (v->removed) continue;
      checkVarSize(*v);
      checkSharding(*v->block->program, *v);
      // The mesh agreement compares only vars that carry a dist_attr: one without adds nothing,
      // and its namesakes on the other ranks agreed before (or are touched themselves).
      if (!v->hasDistAttr()) continue;
      const size_t bi = v->block->position;
      if (!names_seen.emplace(bi, v->name).second) {
        if (mesh_seen.insert(v).second) mesh_.add(*v->block->program, bi, SIZE_MAX, *v, shardings_);
        continue;
      }
      for (const auto& q : job_.programs) {
        const Var* w = q.get() == v->block->program ? v : bi < q->blocks.size() ? q->blocks[bi]->findLocal(v->name) : nullptr;
        if (w && !w->removed && w->hasDistAttr() && mesh_seen.insert(w).second) mesh_.add(*q, bi, SIZE_MAX, *w, shardings_);
      }
    }
    for (auto& [pointer, message] : mesh_.take()) report(std::move(pointer), std::move(message));
    std::set<int64_t> rings(j.erased_rings.begin(), j.erased_rings.end());
    bool p2p = !j.erased_rings.empty();  // an erased send or receive leaves its partner unpaired
    auto ringOf = [&](const Op& op) {
      ResolvedOp r = resolveOp(op.type);
      if (r && r.def->p2p) p2p = true;
      if (r && r.def->collective)
        if (auto c = asCollective(op); c && communicates(*c)) rings.insert(c->ring_id);
    };
    for (const Op* op : ops) {
      if (problems_.size() >= opts_.max_problems) break;
      checkOp(*op->block->program, *op->block, *op, false);
      ringOf(*op);
    }
    for (const Op* op : j.moved)
      if (!j.erased.contains(op)) ringOf(*op);
    // A new stream or event leaves the op's ring order and pairing as they were: its own rules only.
    for (const Op* op : j.execution) {
      if (problems_.size() >= opts_.max_problems) break;
      if (!j.erased.contains(op) && ops_seen.insert(op).second) checkOp(*op->block->program, *op->block, *op, false);
    }
    bool job_p2p = false;
    if (!rings.empty() || p2p)
      for (const auto& p : job_.programs)
        for (const auto& b : p->blocks)
          for (const Op& op : b->ops) {
            ResolvedOp r = resolveOp(op.type);
            if (!r) continue;
            job_p2p = job_p2p || r.def->p2p.has_value();
            if (!r.def->collective) continue;
            if (auto c = asCollective(op); c && communicates(*c) && rings.count(c->ring_id)) noteIssue(*p, op, *c);
          }
    if (opts_.collectives && problems_.empty()) checkCollectiveOrder();
    if (opts_.collectives && problems_.empty() && p2p && job_p2p) checkP2PPairing(job_, reporter());
    return std::move(problems_);
  }

  // Declared in this block or an ancestor (the loader resolved names; passes must keep that true).
  static bool inScope(const Var* v, const Block& b) {
    for (const Block* x = &b; x; x = x->parent)
      if (v->block == x) return true;
    return false;
  }

  void checkBlock(const Program& p, const Block& b, size_t block_index) {
    for (size_t vi = 0; vi < b.vars.size(); ++vi)
      if (const Var& v = *b.vars[vi]; !v.removed) {
        checkVarSize(v);
        checkSharding(p, v);
        if (v.hasDistAttr()) mesh_.add(p, block_index, vi, v, shardings_);
      }
    for (const Op& op : b.ops) {
      if (problems_.size() >= opts_.max_problems) return;  // messages walk the block: stay linear
      checkOp(p, b, op, true);
    }
  }

  // One op's own rules; `note_issue`: collect its ring's issue order (the walk over every op).
  void checkOp(const Program& p, const Block& b, const Op& op, bool note_issue) {
    {
      bool resolved = true;
      for (int dir = 0; dir < 2; ++dir) {
        const auto& slots = dir == 0 ? op.inputs : op.outputs;
        for (const auto& s : slots) {
          for (size_t k = 0; k < s.args.size(); ++k) {
            const Var* v = s.args[k].var;
            if (!v || v->removed || v->name != s.args[k].name || !inScope(v, b)) {
              resolved = false;
              report(opPtr(op) + (dir == 0 ? "/inputs/" : "/outputs/") + pointerToken(s.name) + "/" + std::to_string(k),
                     "var \"" + std::string(s.args[k].name) + "\" is not declared in block " + std::to_string(b.idx) + " or its ancestors");
            }
          }
        }
      }
      if (!resolved) return;
      if (auto c = asCollective(op)) {
        checkCollective(p, op, *c);  // its rules are here
        if (note_issue && communicates(*c)) noteIssue(p, op, *c);
      }
      else {
        if (auto pp = asPointToPoint(op)) checkP2POp(job_, p, op, *pp, opPtr(op), reporter());
        if (opts_.shapes) checkShapes(op);
      }
    }
  }

  // Every byte size replay, the analyses and the memory budget compute must fit int64
  // (support/checked_size.h): a wrapped size allocates a small buffer that kernels overrun.
  void checkVarSize(const Var& v) {
    if (!known(&v) || v.byteSize()) return;
    auto n = checkedNumel(v.shape);
    std::string why = n ? std::to_string(*n) + " elements x " + std::to_string(dtypeSize(v.dtype)) + " bytes overflow int64"
                        : "its element count overflows int64";
    report(varPointer(v) + "/shape", "var \"" + std::string(v.name) + "\" " + typeText(v) + ": " + why);
  }

  // Replay slices a sharded program input by its dims_mapping and mesh (runtime/inputs.cpp): the
  // same parse, checked here (verify/sharding.h).
  void checkSharding(const Program& p, const Var& v) {
    // Most vars are replicated: one cached parse says so without building their Sharding.
    if (!v.hasDistAttr() || !shardings_.of(v.dist_attr).sharded) return;
    std::string problem;
    auto s = varSharding(v, &problem, &shardings_);
    if (!problem.empty()) return report(varPointer(v) + "/dist_attr", problem);
    if (!s) return;
    for (int64_t id : s->process_ids)
      if (id == p.rank) return;
    report(varPointer(v) + "/dist_attr/process_mesh", "var \"" + std::string(v.name) + "\" is sharded over a mesh without rank " + std::to_string(p.rank) + ", whose program declares it");
  }

  void checkCollective(const Program& p, const Op& op, const Collective& c) {
    auto ring = op.attrs.getInt("ring_id");
    if (!ring) {
      report(opPtr(op) + "/attrs/ring_id", std::string(op.type) + " needs an integer ring_id");
      return;
    }
    const ProcessGroup* g = job_.group(*ring);
    if (!g) {
      report(opPtr(op) + "/attrs/ring_id", "ring_id " + std::to_string(*ring) + " has no process group");
      return;
    }
    if (g->positionOf(p.rank) < 0)
      report(opPtr(op) + "/attrs/ring_id", "rank " + std::to_string(p.rank) + " is not a member of ring " + std::to_string(*ring));
    // A compute op that communicates: its own rule checks its shapes (and its ring attributes).
    if (c.kind == CollectiveKind::KernelAllReduce) {
      if (opts_.shapes) checkShapes(op);
      return;
    }
    // Rules replay relies on (runtime/rank_executor.cpp): a known reduction, a root inside the ring.
    if (c.kind == CollectiveKind::AllReduce && (int(c.reduce) < 0 || int(c.reduce) > 4))
      report(opPtr(op) + "/attrs/reduce_type", "reduce_type " + std::to_string(int(c.reduce)) + " is not one of 0..4 (SUM, MAX, MIN, PROD, AVG)");
    if (std::string root_key(collectiveRootAttr(c.kind)); !root_key.empty()) {
      auto root = op.attrs.getInt(root_key);
      if (op.attrs.find(root_key) && !root) report(opPtr(op) + "/attrs/" + root_key, root_key + " must be an integer");
      int64_t r = root.value_or(0);
      if (r < 0 || r >= int64_t(g->ranks.size()))
        report(opPtr(op) + "/attrs/" + root_key, root_key + " " + std::to_string(r) + " is not a position in ring " + std::to_string(*ring) +
                                                     " (size " + std::to_string(g->ranks.size()) + ")");
    }
    if (c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllGather) {
      auto n = op.attrs.getInt("nranks");
      if (n && *n != int64_t(g->ranks.size()))
        report(opPtr(op) + "/attrs/nranks", "nranks " + std::to_string(*n) + " differs from ring " + std::to_string(*ring) + "'s size " + std::to_string(g->ranks.size()));
    }
    const Var* x = op.in(c.in_slot);
    const Var* y = op.out(c.out_slot);
    if (!x || !y) {
      report(opPtr(op), std::string(op.type) + " needs input " + std::string(c.in_slot) + " and output " + std::string(c.out_slot));
      return;
    }
    if (!opts_.shapes || !known(x) || !known(y)) return;
    int64_t n = int64_t(g->ranks.size());
    auto mismatch = [&](const std::string& rule) {
      report(opPtr(op), std::string(op.type) + ": " + rule + ", but input is " + typeText(*x) + " and output " + typeText(*y));
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
  void checkShapes(const Op& op) {
    OpView view(op);
    if (auto e = checkOpDefinition(view)) report(opPtr(op) + e->where, e->message);
  }

  // What each program issues on each ring, in issue order (blocks order, then ops order: the
  // order of this walk, which is RingOrder's, analysis/ring_order.h), gathered while checking
  // each op rather than by another walk over every op.
  struct Issued {
    const Op* op;
    Collective c;
  };
  struct Seq {
    const Program* prog;
    std::vector<Issued> ops;
  };
  std::map<int64_t, std::vector<Seq>> rings_;  // ring -> every program issuing on it, job order
  int64_t last_ring_ = -1;
  std::vector<Seq>* last_seqs_ = nullptr;

  void noteIssue(const Program& p, const Op& op, const Collective& c) {
    if (!last_seqs_ || c.ring_id != last_ring_) {
      last_ring_ = c.ring_id;
      last_seqs_ = &rings_[c.ring_id];
    }
    if (last_seqs_->empty() || last_seqs_->back().prog != &p) last_seqs_->push_back({&p, {}});
    last_seqs_->back().ops.push_back({&op, c});
  }

  // For each ring, every member rank present must issue the same sequence of collectives. Run
  // only on a job whose every op passed its own rules, so the walk above saw every collective.
  void checkCollectiveOrder() {
    auto& rings = rings_;
    auto describe = [&](const Op* op) {
      auto c = asCollective(*op);
      const Var* x = op->in(c->in_slot);
      std::string s = std::string(op->type) + " " + (x ? typeText(*x) : std::string("?"));
      return s + " (" + opPtr(*op) + ")";
    };
    for (auto& [ring, seqs] : rings) {
      // A member rank whose program is present but issues nothing on the ring diverges too.
      const ProcessGroup* g = job_.group(ring);
      if (!g) continue;
      for (int64_t r : g->ranks) {
        const Program* p = job_.program(r);
        bool listed = false;
        for (auto& s : seqs) listed |= s.prog == p;
        if (p && !listed) seqs.push_back({p, {}});
      }
      if (seqs.size() < 2) continue;
      const Seq& ref = seqs.front();
      for (size_t si = 1; si < seqs.size(); ++si) {
        const Seq& other = seqs[si];
        size_t n = std::min(ref.ops.size(), other.ops.size());
        bool reported = false;
        for (size_t k = 0; k < n && !reported; ++k) {
          const Op *a = ref.ops[k].op, *b = other.ops[k].op;
          const Collective *ca = &ref.ops[k].c, *cb = &other.ops[k].c;
          const Var *xa = a->in(ca->in_slot), *xb = b->in(cb->in_slot);
          bool same = ca->kind == cb->kind && xa && xb && xa->dtype == xb->dtype && xa->numel() == xb->numel();
          if (same && ca->reduce == cb->reduce && (collectiveRootAttr(ca->kind).empty() || ca->root == cb->root)) continue;
          // Messages only: built for the (at most one per rank pair) collective that differs.
          std::string head = "ring " + std::to_string(ring) + " collective #" + std::to_string(k) + " differs: ";
          std::string ra = "rank " + std::to_string(ref.prog->rank), rb = "rank " + std::to_string(other.prog->rank);
          if (!same) {
            reported = true;
            report(opPtr(*b), head + ra + " issues " + describe(a) + ", " + rb + " issues " + describe(b));
          } else if (ca->reduce != cb->reduce) {  // same type and shape: say which attribute differs
            reported = true;
            report(opPtr(*b), head + "reduce_type: " + ra + " has " + reduceName(ca->reduce) + ", " + rb + " has " +
                                  reduceName(cb->reduce) + " (" + describe(a) + "; " + describe(b) + ")");
          } else if (std::string_view root_key = collectiveRootAttr(ca->kind); !root_key.empty() && ca->root != cb->root) {
            reported = true;
            report(opPtr(*b), head + std::string(root_key) + ": " + ra + " has " + std::to_string(ca->root) + ", " + rb + " has " +
                                  std::to_string(cb->root) + " (" + describe(a) + "; " + describe(b) + ")");
          }
        }
        if (!reported && ref.ops.size() != other.ops.size()) {
          const Seq& longer = ref.ops.size() > other.ops.size() ? ref : other;
          const Seq& shorter = ref.ops.size() > other.ops.size() ? other : ref;
          report(opPtr(*longer.ops[n].op), "ring " + std::to_string(ring) + ": rank " + std::to_string(longer.prog->rank) + " issues " +
                                            std::to_string(longer.ops.size()) + " collectives but rank " + std::to_string(shorter.prog->rank) +
                                            " issues " + std::to_string(shorter.ops.size()) + "; first unmatched: " + describe(longer.ops[n].op));
        }
      }
    }
  }
};

}  // namespace

std::vector<Diagnostic> verifyJob(const Job& job, const VerifyOptions& opts) { return Verifier(job, opts).run(); }

}  // namespace spopt
