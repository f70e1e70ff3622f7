#include "verify/verifier.h"

#include <algorithm>
#include <set>

#include <absl/container/flat_hash_set.h>

#include "analysis/collectives.h"
#include "ir/json_pointer.h"
#include "ir/json_text.h"
#include "ops/op_def.h"
#include "ops/shape_math.h"
#include "support/parallel.h"
#include "verify/cross_rank.h"
#include "verify/issue_orders.h"
#include "verify/p2p_check.h"
#include "verify/program_checker.h"
#include "verify/sharding.h"

namespace spopt {
namespace {

std::string reduceName(ReduceOp r) {
  static const char* const kNames[] = {"SUM", "MAX", "MIN", "PROD", "AVG"};
  int i = int(r);
  return i >= 0 && i < 5 ? kNames[i] : std::to_string(i);
}

class Verifier {
 public:
  Verifier(const Job& job, const VerifyOptions& opts) : job_(job), opts_(opts), mesh_(job) {}

  std::vector<Diagnostic> run() {
    // Replay, the analyses and the passes all work per rank: a job of no ranks is no job.
    if (job_.programs.empty()) report("/programs", "job has no programs");
    checkGroups();
    if (opts_.touched) return runTouched(*opts_.touched);
    checkRanks();
    parallelFor(checkers_.size(), [&](size_t i) { checkers_[i].checkProgram(true); });  // each reads its program only
    for (size_t i = 0; i < checkers_.size(); ++i)  // in job order, as MeshAgreement wants them
      for (const ProgramChecker::ShardedVar& s : checkers_[i].sharded) mesh_.add(*job_.programs[i], s.block, s.index, *s.var, checkers_[i].shardings());
    mergeCheckers();
    for (auto& [pointer, message] : mesh_.take()) report(std::move(pointer), std::move(message));
    if (opts_.collectives && problems_.empty()) checkCollectiveOrder();
    if (opts_.collectives && problems_.empty()) checkP2PPairing(job_, reporter());
    keepOrders(nullptr);
    return std::move(problems_);
  }

 private:
  const Job& job_;
  const VerifyOptions& opts_;
  std::vector<Diagnostic> problems_;
  MeshAgreement mesh_;
  std::vector<ProgramChecker> checkers_;  // [program position], made by checkRanks

  void report(std::string pointer, std::string message) {
    if (problems_.size() < opts_.max_problems) problems_.push_back({job_.path, std::move(pointer), std::move(message)});
  }
  ReportFn reporter() {
    return [this](std::string pointer, std::string message) { report(std::move(pointer), std::move(message)); };
  }

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

  // A checker per program, each starting with what is wrong with its rank (the one rule across
  // programs that reads no var or op).
  void checkRanks() {
    std::set<int64_t> ranks;
    checkers_.reserve(job_.programs.size());
    for (const auto& p : job_.programs) {
      ProgramChecker& c = checkers_.emplace_back(job_, *p, opts_);
      std::string at = programPointer(p->position);
      if (p->rank < 0 || p->rank >= job_.world_size)
        c.problems.push_back({job_.path, at + "/rank", "rank " + std::to_string(p->rank) + " is outside the world [0, " + std::to_string(job_.world_size) + ")"});
      if (!ranks.insert(p->rank).second) c.problems.push_back({job_.path, at + "/rank", "rank " + std::to_string(p->rank) + " has two programs"});
    }
  }

  // The checkers' problems in program order (each in the order its walk found them), and their
  // collectives' issues as each ring's sequences in job order (of `only` those rings, when given).
  void mergeCheckers(const std::set<int64_t>* only = nullptr) {
    for (size_t i = 0; i < checkers_.size(); ++i) {
      for (Diagnostic& d : checkers_[i].problems)
        if (problems_.size() < opts_.max_problems) problems_.push_back(std::move(d));
      for (const auto& [ring, ops] : checkers_[i].issued)
        if (!only || only->count(ring)) rings_[ring].push_back({job_.programs[i].get(), &ops});
    }
  }

  // The kept issue orders, when they describe this job; else null.
  IssueOrders::State* keptOrders() const {
    IssueOrders* k = opts_.issue_orders;
    return k && k->state && k->state->job == &job_ && k->state->rings.size() == job_.programs.size() ? k->state.get() : nullptr;
  }
  // After a check: where it passed, the checkers' orders (every ring's: `kept` null) become the
  // kept ones, or `kept` (updated in place) stays; where it failed, none is kept.
  void keepOrders(IssueOrders::State* kept) {
    IssueOrders* k = opts_.issue_orders;
    if (!k) return;
    if (!problems_.empty()) return k->state.reset();
    if (kept) return;
    auto s = std::make_shared<IssueOrders::State>();
    s->job = &job_;
    for (ProgramChecker& c : checkers_) {
      s->rings.push_back(std::move(c.issued));
      s->p2p.push_back(c.issues_p2p);
    }
    k->state = std::move(s);
  }

  // After a journaled pass (VerifyOptions::touched): the rules of the ops and vars it touched, the
  // mesh agreement of those vars' names across ranks, and the issue order of every ring whose
  // collectives it inserted, erased or moved (and the send/receive pairing when the job has any).
  // Ops it did not touch kept their own rules: their slots, attrs and vars are as verified before.
  // Each program's ops are checked on a thread of their own; problems come in program order.
  std::vector<Diagnostic> runTouched(const EditJournal& j) {
    checkRanks();
    for (ProgramChecker& c : checkers_) c.checkProgram(false);
    const size_t n = job_.programs.size();
    // [program position]: the ops to check; those of `execution` only had their execution
    // attributes set, which leaves their ring's issue order and pairing as they were.
    std::vector<std::vector<const Op*>> edited(n), execution(n);
    // The journal's records by program, in journal order (a var's readers and writers are ops of
    // its program); each program's are then deduplicated and checked on a thread of its own.
    std::vector<std::vector<const Op*>> ops_of(n), execution_of(n);
    std::vector<std::vector<std::pair<size_t, const Var*>>> vars_of(n), sharded_of(n);  // (index in j.vars, var)
    for (const Op* op : j.ops)
      if (!j.erased.contains(op)) ops_of[op->block->program->position].push_back(op);
    for (const Op* op : j.execution)
      if (!j.erased.contains(op)) execution_of[op->block->program->position].push_back(op);
    for (size_t k = 0; k < j.vars.size(); ++k) vars_of[j.vars[k]->block->program->position].push_back({k, j.vars[k]});
    parallelFor(n, [&](size_t i) {  // each reads its program and its checker only
      absl::flat_hash_set<const Op*> ops_seen;
      absl::flat_hash_set<const Var*> vars_seen;
      auto touch = [&](const Op* op, std::vector<const Op*>& into) {
        if (!j.erased.contains(op) && ops_seen.insert(op).second) into.push_back(op);
      };
      for (const Op* op : ops_of[i]) touch(op, edited[i]);
      for (auto [k, v] : vars_of[i]) {
        if (!vars_seen.insert(v).second) continue;
        for (const OpList* users : {&v->readers, &v->writers})
          for (const Op* op : *users) touch(op, edited[i]);
        if (v->removed) continue;
        checkers_[i].checkVar(*v);
        // The mesh agreement compares only vars that carry a dist_attr: one without adds nothing,
        // and its namesakes on the other ranks agreed before (or are touched themselves).
        if (v->hasDistAttr()) sharded_of[i].push_back({k, v});
      }
      for (const Op* op : execution_of[i]) touch(op, execution[i]);
    });
    // The mesh agreement's reads across programs, one thread, in journal order. A pass edits every
    // rank alike, so a name is touched on each rank: its declarations on every rank are looked up
    // once, at its first touched var (a later one adds only itself).
    std::vector<std::pair<size_t, const Var*>> sharded;
    for (const auto& of : sharded_of) sharded.insert(sharded.end(), of.begin(), of.end());
    std::sort(sharded.begin(), sharded.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    absl::flat_hash_set<std::pair<size_t, std::string_view>> names_seen;
    absl::flat_hash_set<const Var*> mesh_seen;
    for (auto [k, v] : sharded) {
      const size_t bi = v->block->position;
      if (!names_seen.emplace(bi, v->name).second) {
        if (mesh_seen.insert(v).second) mesh_.add(*v->block->program, bi, SIZE_MAX, *v, checkers_[v->block->program->position].shardings());
        continue;
      }
      for (const auto& q : job_.programs) {
        const Var* w = q.get() == v->block->program ? v : bi < q->blocks.size() ? q->blocks[bi]->findLocal(v->name) : nullptr;
        if (w && !w->removed && w->hasDistAttr() && mesh_seen.insert(w).second) mesh_.add(*q, bi, SIZE_MAX, *w, checkers_[q->position].shardings());
      }
    }
    // The rings (and whether a send or receive) the edits bear on: per program for its checked
    // ops, per slice for the moved ones; each thread writes only its own entry.
    struct Bearing {
      std::set<int64_t> rings;
      bool p2p = false;
      // The op's ring, when it is a communicating collective.
      std::optional<int64_t> note(const Op& op) {
        ResolvedOp r = resolveOp(op.type);
        if (r && r.def->p2p) p2p = true;
        if (!r || !r.def->collective) return std::nullopt;
        auto c = asCollective(op);
        if (!c || !communicates(*c)) return std::nullopt;
        rings.insert(c->ring_id);
        return c->ring_id;
      }
    };
    std::vector<Bearing> bearing(job_.programs.size());
    parallelFor(checkers_.size(), [&](size_t i) {  // each reads its program only
      for (const Op* op : edited[i]) {
        if (checkers_[i].full()) return;
        checkers_[i].checkOp(*op, false);
        bearing[i].note(*op);
      }
      for (const Op* op : execution[i]) {  // only their execution attributes changed
        if (checkers_[i].full()) return;
        checkers_[i].checkExecution(*op);
      }
    });
    const size_t slices = std::min(j.moved.size(), threadLimit());
    std::vector<Bearing> moved(slices);
    std::vector<std::vector<std::pair<size_t, int64_t>>> moved_at(slices);  // (program position, ring) of moved collectives
    parallelFor(slices, [&](size_t s) {  // reads only
      for (size_t k = j.moved.size() * s / slices; k < j.moved.size() * (s + 1) / slices; ++k) {
        const Op* op = j.moved[k];
        if (j.erased.contains(op)) continue;
        if (std::optional<int64_t> ring = moved[s].note(*op)) moved_at[s].push_back({op->block->program->position, *ring});
      }
    });
    std::set<int64_t> rings(j.erased_rings.begin(), j.erased_rings.end());
    bool p2p = !j.erased_rings.empty();  // an erased send or receive leaves its partner unpaired
    for (const std::vector<Bearing>* v : {&bearing, &moved})
      for (const Bearing& x : *v) {
        rings.insert(x.rings.begin(), x.rings.end());
        p2p = p2p || x.p2p;
      }
    // The issue orders of those rings: the kept ones brought up to date, or each program's walk
    // (of every ring, where the orders are to be kept: the next check's starting point).
    IssueOrders::State* kept = keptOrders();
    bool any_p2p = false;
    if (kept) {
      std::vector<std::set<int64_t>> moved_rings(checkers_.size()), changed(checkers_.size());
      for (const auto& at : moved_at)
        for (auto [program, ring] : at) moved_rings[program].insert(ring);
      absl::flat_hash_set<const Op*> edited_anywhere;  // not `execution`: such an op keeps its entry
      for (const auto& e : edited) edited_anywhere.insert(e.begin(), e.end());
      parallelFor(checkers_.size(), [&](size_t i) {  // each reads and renumbers its program only
        changed[i] = updateIssueOrders(*kept, i, j, {edited[i], edited_anywhere, moved_rings[i]});
      });
      for (const auto& c : changed) rings.insert(c.begin(), c.end());  // also the rings an edited op left
      any_p2p = std::find(kept->p2p.begin(), kept->p2p.end(), 1) != kept->p2p.end();
      mergeCheckers(&rings);  // their problems only: they noted no issue
      for (size_t i = 0; i < checkers_.size(); ++i)
        for (const auto& [ring, ops] : kept->rings[i])
          if (rings.count(ring)) rings_[ring].push_back({job_.programs[i].get(), &ops});
    } else {
      const bool keeping = opts_.issue_orders != nullptr;
      if (!rings.empty() || p2p || keeping) parallelFor(checkers_.size(), [&](size_t i) { checkers_[i].noteIssues(keeping ? nullptr : &rings); });
      for (const ProgramChecker& c : checkers_) any_p2p = any_p2p || c.issues_p2p;
      mergeCheckers(&rings);
    }
    for (auto& [pointer, message] : mesh_.take()) report(std::move(pointer), std::move(message));
    if (opts_.collectives && problems_.empty()) checkCollectiveOrder();
    if (opts_.collectives && problems_.empty() && p2p && any_p2p) checkP2PPairing(job_, reporter());
    keepOrders(kept);
    return std::move(problems_);
  }

  // What each program issues on each ring, in issue order (blocks order, then ops order: the
  // order of the checkers' walks, which is RingOrder's, analysis/ring_order.h), gathered while
  // checking each op rather than by another walk over every op.
  struct Seq {
    const Program* prog;
    const std::vector<IssuedCollective>* ops;  // the checkers' or the kept orders'
  };
  std::map<int64_t, std::vector<Seq>> rings_;  // ring -> every program issuing on it, job order
  static inline const std::vector<IssuedCollective> kNoIssues{};

  // For each ring, every member rank present must issue the same sequence of collectives. Run
  // only on a job whose every op passed its own rules, so the walk above saw every collective.
  void checkCollectiveOrder() {
    auto& rings = rings_;
    auto describe = [&](const Op* op) {
      auto c = asCollective(*op);
      const Var* x = op->in(c->in_slot);
      std::string s = std::string(op->type) + " " + (x ? typeText(*x) : std::string("?"));
      return s + " (" + opPointer(*op) + ")";
    };
    for (auto& [ring, seqs] : rings) {
      // A member rank whose program is present but issues nothing on the ring diverges too.
      const ProcessGroup* g = job_.group(ring);
      if (!g) continue;
      for (int64_t r : g->ranks) {
        const Program* p = job_.program(r);
        bool listed = false;
        for (auto& s : seqs) listed |= s.prog == p;
        if (p && !listed) seqs.push_back({p, &kNoIssues});
      }
      if (seqs.size() < 2) continue;
      const Seq& ref = seqs.front();
      for (size_t si = 1; si < seqs.size(); ++si) {
        const Seq& other = seqs[si];
        size_t n = std::min(ref.ops->size(), other.ops->size());
        bool reported = false;
        for (size_t k = 0; k < n && !reported; ++k) {
          const IssuedCollective &ia = (*ref.ops)[k], &ib = (*other.ops)[k];
          const Op *a = ia.op, *b = ib.op;
          const Collective *ca = &ia.c, *cb = &ib.c;
          bool same = ca->kind == cb->kind && ia.has_input && ib.has_input && ia.dtype == ib.dtype && ia.numel == ib.numel;
          if (same && ca->reduce == cb->reduce && (collectiveRootAttr(ca->kind).empty() || ca->root == cb->root)) continue;
          // Messages only: built for the (at most one per rank pair) collective that differs.
          std::string head = "ring " + std::to_string(ring) + " collective #" + std::to_string(k) + " differs: ";
          std::string ra = "rank " + std::to_string(ref.prog->rank), rb = "rank " + std::to_string(other.prog->rank);
          if (!same) {
            reported = true;
            report(opPointer(*b), head + ra + " issues " + describe(a) + ", " + rb + " issues " + describe(b));
          } else if (ca->reduce != cb->reduce) {  // same type and shape: say which attribute differs
            reported = true;
            report(opPointer(*b), head + "reduce_type: " + ra + " has " + reduceName(ca->reduce) + ", " + rb + " has " +
                                  reduceName(cb->reduce) + " (" + describe(a) + "; " + describe(b) + ")");
          } else if (std::string_view root_key = collectiveRootAttr(ca->kind); !root_key.empty() && ca->root != cb->root) {
            reported = true;
            report(opPointer(*b), head + std::string(root_key) + ": " + ra + " has " + std::to_string(ca->root) + ", " + rb + " has " +
                                  std::to_string(cb->root) + " (" + describe(a) + "; " + describe(b) + ")");
          }
        }
        if (!reported && ref.ops->size() != other.ops->size()) {
          const Seq& longer = ref.ops->size() > other.ops->size() ? ref : other;
          const Seq& shorter = ref.ops->size() > other.ops->size() ? other : ref;
          report(opPointer(*(*longer.ops)[n].op), "ring " + std::to_string(ring) + ": rank " + std::to_string(longer.prog->rank) + " issues " +
                                            std::to_string(longer.ops->size()) + " collectives but rank " + std::to_string(shorter.prog->rank) +
                                            " issues " + std::to_string(shorter.ops->size()) + "; first unmatched: " + describe((*longer.ops)[n].op));
        }
      }
    }
  }
};

}  // namespace

std::vector<Diagnostic> verifyJob(const Job& job, const VerifyOptions& opts) { return Verifier(job, opts).run(); }

}  // namespace spopt
