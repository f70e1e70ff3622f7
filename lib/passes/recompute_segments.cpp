#include "passes/recompute_segments.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "analysis/cost_model.h"
#include "analysis/memory.h"
#include "ir/op_role.h"
#include "ops/op_view.h"
#include "ops/recompute_rule.h"
#include "passes/recompute_subsets.h"
#include "passes/regather_match.h"

namespace spopt {
namespace {

struct RecomputeVarUse {
  int64_t last_fwd = -1, first_bwd = -1;
};

struct RecomputeWalk {
  std::vector<Op*> ops;
  std::vector<Var*> anchors;
  Refusal refusal;
};

struct SegmentUnionFind {
  explicit SegmentUnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t(0)); }
  size_t find(size_t i) { return parent[i] == i ? i : parent[i] = find(parent[i]); }
  void unite(size_t a, size_t b) { parent[find(a)] = find(b); }
  std::vector<size_t> parent;
};

class SegmentFinder {
 public:
  SegmentFinder(Program& p, const std::function<bool(const Op&)>& allowed, bool explaining, SegmentShape shape)
      : p_(p), entry_(*const_cast<Block*>(entryBlockOf(p))), allowed_(allowed), explaining_(explaining), shape_(shape) {}

  RankSegments run() {
    RankSegments r;
    r.program = &p_;
    r.live = computeProgramLiveness(p_);
    MemoryProfile prof = profileMemory(p_, r.live, 0);
    r.slots = modelSlots(prof, r.live.entry());
    r.peak = prof.peak_bytes;
    use_.assign(p_.next_var_id, {});
    for (Op& op : entry_.ops) ops_.push_back(&op);
    for (size_t i = 0; i < ops_.size(); ++i) {
      const Op& op = *ops_[i];
      bool fwd = phaseOf(op) == Phase::Forward, bwd = isBackwardOp(op);
      for (const Slot& s : op.inputs)
        for (const Arg& a : s.args) {
          if (!a.var || a.var->block != &entry_ || !readsBuffer(op, s.name)) continue;
          RecomputeVarUse& u = use_[a.var.id()];
          if (fwd) u.last_fwd = int64_t(i);
          if (bwd && u.first_bwd < 0) u.first_bwd = int64_t(i);
        }
    }
    // The saved vars, in program order of their producers.
    std::vector<char> listed(p_.next_var_id, 0);
    for (size_t i = 0; i < ops_.size(); ++i) {
      Op& op = *ops_[i];
      if (phaseOf(op) != Phase::Forward) continue;
      for (const Slot& s : op.outputs)
        for (const Arg& a : s.args) {
          Var* v = a.var;
          if (!v || v->block != &entry_ || v->persistable || keptToEnd(*v) || use_[v->id].first_bwd < 0 || listed[v->id]++) continue;
          SavedVar sv;
          sv.var = v;
          sv.producer = &op;
          sv.producer_at = i;
          sv.last_fwd_at = std::max<int64_t>(int64_t(i), use_[v->id].last_fwd);
          sv.first_bwd_at = use_[v->id].first_bwd;
          r.saved.push_back(sv);
        }
    }
    group(r);
    return r;
  }

 private:
  std::string name(const Var* v) const { return explaining_ ? std::string(v->name) : std::string(); }
  bool kept(const Var* v) const {
    return v->persistable || keptToEnd(*v) || (v->block == &entry_ && use_[v->id].first_bwd >= 0);
  }
  size_t at(const Op* op) const { return entry_.indexOf(op); }

  // The forward ops that make `t` again from kept vars, or why there are none.
  RecomputeWalk walk(Var* t) {
    RecomputeWalk w;
    std::unordered_set<const Var*> seen{t};
    std::unordered_set<const Op*> taken;
    std::vector<Var*> stack{t};
    auto refuse = [&](std::string code, std::string reason) {
      w.refusal = {std::move(code), explaining_ ? std::move(reason) : std::string()};
      return w;
    };
    while (!stack.empty()) {
      Var* u = stack.back();
      stack.pop_back();
      if (u != t && kept(u)) {
        w.anchors.push_back(u);
        continue;
      }
      if (u->block != &entry_) return refuse("outside-entry-block", "needs " + name(u) + ", declared outside the entry block");
      if (u->writers.empty()) return refuse("input-not-kept", "needs " + name(u) + ", a program input forward does not keep");
      if (u->writers.size() != 1) return refuse("output-rewritten", "needs " + name(u) + ", written by more than one op");
      Op* op = u->writers.front();
      // A constant (PIR passes a Scalar attribute as a pd_op.full operand, with no op_role) is
      // made again wherever it is needed, whatever its phase or the policy.
      bool constant = OpView(*op).has(trait::Constant) && op->inputs.empty();
      if (op->block != &entry_ || (!constant && phaseOf(*op) != Phase::Forward))
        return refuse("not-forward", "needs " + name(u) + ", made by " + std::string(op->type) + " outside forward");
      if (auto why = whyNotRecomputable(*op)) return refuse(why->code, "needs " + name(u) + ": " + why->reason);
      if (!constant && !allowed_(*op))
        return refuse("not-in-policy", "needs " + name(u) + ", made by " + std::string(op->type) + ", which the policy leaves out");
      if (!taken.insert(op).second) continue;
      w.ops.push_back(op);
      for (const Slot& s : op->inputs)
        for (const Arg& a : s.args)
          if (a.var && readsBuffer(*op, s.name) && seen.insert(a.var).second) stack.push_back(a.var);
    }
    return w;
  }

  // Finest segments (walks sharing an op), the graph of which reads which, then the segments the
  // shape asks for.
  void group(RankSegments& r) {
    std::unordered_map<const Var*, size_t> target_of;
    for (size_t i = 0; i < r.saved.size(); ++i) {
      walks_.push_back(walk(r.saved[i].var));
      r.saved[i].refusal = walks_.back().refusal;
      if (walks_.back().refusal.empty()) target_of[r.saved[i].var] = i;
    }
    SegmentUnionFind uf(r.saved.size());
    std::unordered_map<const Op*, size_t> op_owner;
    for (size_t i = 0; i < r.saved.size(); ++i)
      if (r.saved[i].refusal.empty())
        for (Op* op : walks_[i].ops)
          if (auto [it, fresh] = op_owner.emplace(op, i); !fresh) uf.unite(i, it->second);
    std::vector<std::vector<size_t>> fine;
    std::unordered_map<size_t, size_t> fine_of_root;
    for (size_t i = 0; i < r.saved.size(); ++i)
      if (r.saved[i].refusal.empty()) {
        auto found = fine_of_root.emplace(uf.find(i), fine.size());
        if (found.second) fine.emplace_back();
        fine[found.first->second].push_back(i);
      }
    // Under the budget each finest segment must be placeable on its own; the others drop out.
    std::vector<Segment> parts;
    std::vector<size_t> part_of(r.saved.size(), SIZE_MAX);
    for (std::vector<size_t>& targets : fine) {
      Segment s;
      s.targets = std::move(targets);
      if (shape_ == SegmentShape::Budget && !finish(r, s)) continue;
      for (size_t ti : s.targets) part_of[ti] = parts.size();
      parts.push_back(std::move(s));
    }
    NodeAdjacency adj(parts.size());
    for (size_t k = 0; k < parts.size(); ++k)
      for (size_t ti : parts[k].targets)
        for (const Var* a : walks_[ti].anchors)
          if (auto it = target_of.find(a); it != target_of.end() && part_of[it->second] != SIZE_MAX && part_of[it->second] != k) {
            adj[k].push_back(part_of[it->second]);
            adj[part_of[it->second]].push_back(k);
          }
    std::vector<std::vector<size_t>> members;
    auto offer = [&](Segment s, std::vector<size_t> of) {
      for (size_t ti : s.targets)
        if (r.saved[ti].segment < 0) r.saved[ti].segment = int(r.segments.size());
      r.segments.push_back(std::move(s));
      members.push_back(std::move(of));
    };
    if (shape_ == SegmentShape::Budget)
      for (size_t k = 0; k < parts.size(); ++k) offer(parts[k], {k});
    for (const std::vector<size_t>& comp : connectedComponents(adj)) {
      std::vector<std::vector<size_t>> subsets = shape_ == SegmentShape::Budget
                                                     ? connectedSubsets(comp, adj, kSubChainsPerComponent)
                                                     : std::vector<std::vector<size_t>>{comp};
      for (std::vector<size_t>& subset : subsets) {
        if (shape_ == SegmentShape::Budget && subset.size() < 2) continue;  // offered above
        Segment s;
        for (size_t k : subset) s.targets.insert(s.targets.end(), parts[k].targets.begin(), parts[k].targets.end());
        std::sort(s.targets.begin(), s.targets.end());
        if (finish(r, s, /*combined=*/shape_ == SegmentShape::Budget)) offer(std::move(s), std::move(subset));
      }
    }
    std::vector<std::vector<size_t>> conflicts = subsetConflicts(members, adj);
    for (size_t k = 0; shape_ == SegmentShape::Budget && k < r.segments.size(); ++k) r.segments[k].conflicts = std::move(conflicts[k]);
  }

  // Places the segment and fills in what it costs and frees; false when it cannot be placed: a
  // finest or maximal segment then refuses its vars, a `combined` sub-chain is just not offered.
  bool finish(RankSegments& r, Segment& s, bool combined = false) {
    std::unordered_set<const Op*> ops;
    std::unordered_set<const Var*> targets, anchors;
    for (size_t ti : s.targets) {
      targets.insert(r.saved[ti].var);
      for (Op* op : walks_[ti].ops)
        if (ops.insert(op).second) s.ops.push_back(op);
    }
    std::sort(s.ops.begin(), s.ops.end(), [&](const Op* a, const Op* b) { return entry_.isBefore(a, b); });
    s.insert_at = INT64_MAX;
    for (size_t ti : s.targets) s.insert_at = std::min(s.insert_at, r.saved[ti].first_bwd_at);
    s.insert_before = ops_[size_t(s.insert_at)];
    auto refuseAll = [&](std::string code, std::string reason) {
      if (!combined)
        for (size_t ti : s.targets) r.saved[ti].refusal = {code, explaining_ ? reason : std::string()};
      return false;
    };
    for (size_t ti : s.targets)
      if (r.saved[ti].last_fwd_at >= s.insert_at)
        return refuseAll("read-after-backward", "a forward op reads what the segment makes after backward has begun");
    size_t first_at = at(s.ops.front());
    for (size_t ti : s.targets)
      for (Var* a : walks_[ti].anchors)
        if (!targets.count(a) && anchors.insert(a).second) s.anchors.push_back(a);
    // A var written once holds one value; one written again between the segment and its copy
    // would hand the copy another value.
    for (Var* a : s.anchors)
      for (const Op* w : a->writers.size() > 1 ? a->writers : OpList{})
        if (w->block == &entry_ && at(w) > first_at && int64_t(at(w)) < s.insert_at)
          return refuseAll("input-overwritten", name(a) + " is overwritten by " + std::string(w->type) + " before the recompute");
    for (size_t ti : s.targets) s.bytes += varBytes(*r.saved[ti].var);
    for (const Op* op : s.ops) s.flops += opFlops(*op), s.text += (s.text.empty() ? "" : " > ") + std::string(op->type);
    s.copy_peak = copyPeakBytes(s.ops, targets);
    return true;
  }

  Program& p_;
  Block& entry_;
  const std::function<bool(const Op&)>& allowed_;
  bool explaining_;
  SegmentShape shape_;
  std::vector<RecomputeVarUse> use_;
  std::vector<RecomputeWalk> walks_;  // [saved var]
  std::vector<Op*> ops_;
};

}  // namespace

RankSegments findSegments(Program& p, const std::function<bool(const Op&)>& allowed, bool explaining, SegmentShape shape) {
  if (!entryBlockOf(p)) return {};
  return SegmentFinder(p, allowed, explaining, shape).run();
}

}  // namespace spopt
