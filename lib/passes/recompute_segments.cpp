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
  SegmentFinder(Program& p, const std::function<bool(const Op&)>& allowed, bool explaining, bool merge_dependent)
      : p_(p), entry_(*const_cast<Block*>(entryBlockOf(p))), allowed_(allowed), explaining_(explaining), merge_(merge_dependent) {}

  RankSegments run() {
    RankSegments r;
    r.program = &p_;
    r.live = computeProgramLiveness(p_);
    MemoryProfile prof = profileMemory(p_, r.live, 0);
    r.live_at = std::move(prof.live_at);
    r.peak = prof.peak_bytes;
    use_.assign(p_.next_var_id, {});
    for (Op& op : entry_.ops) ops_.push_back(&op);
    for (size_t i = 0; i < ops_.size(); ++i) {
      const Op& op = *ops_[i];
      bool fwd = phaseOf(op) == Phase::Forward, bwd = isBackwardOp(op);
      for (const Slot& s : op.inputs)
        for (const Arg& a : s.args) {
          if (!a.var || a.var->block != &entry_ || !readsBuffer(op, s.name)) continue;
          RecomputeVarUse& u = use_[a.var->id];
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

  // Candidates that share an op or read each other's vars become one segment.
  void group(RankSegments& r) {
    std::vector<RecomputeWalk> walks;
    std::unordered_map<const Var*, size_t> target_of;
    for (size_t i = 0; i < r.saved.size(); ++i) {
      walks.push_back(walk(r.saved[i].var));
      r.saved[i].refusal = walks.back().refusal;
      if (walks.back().refusal.empty()) target_of[r.saved[i].var] = i;
    }
    SegmentUnionFind uf(r.saved.size());
    std::unordered_map<const Op*, size_t> op_owner;
    for (size_t i = 0; i < r.saved.size(); ++i) {
      if (!r.saved[i].refusal.empty()) continue;
      for (Op* op : walks[i].ops)
        if (auto [it, fresh] = op_owner.emplace(op, i); !fresh) uf.unite(i, it->second);
      for (Var* a : walks[i].anchors)
        if (auto it = target_of.find(a); merge_ && it != target_of.end()) uf.unite(i, it->second);
    }
    std::unordered_map<size_t, size_t> segment_of_root;
    for (size_t i = 0; i < r.saved.size(); ++i) {
      if (!r.saved[i].refusal.empty()) continue;
      size_t root = uf.find(i);
      auto found = segment_of_root.emplace(root, r.segments.size());
      if (found.second) r.segments.emplace_back();
      r.saved[i].segment = int(found.first->second);
      r.segments[found.first->second].targets.push_back(i);
    }
    for (size_t k = 0; k < r.segments.size(); ++k) finish(r, r.segments[k], walks);
    // Segments that cannot be placed refused their vars: drop them, indices kept dense.
    std::vector<Segment> kept_segments;
    for (Segment& s : r.segments) {
      if (!r.saved[s.targets.front()].refusal.empty()) continue;
      for (size_t ti : s.targets) r.saved[ti].segment = int(kept_segments.size());
      kept_segments.push_back(std::move(s));
    }
    r.segments = std::move(kept_segments);
    for (size_t k = 0; k < r.segments.size(); ++k)
      for (const Var* a : r.segments[k].anchors)
        if (auto it = target_of.find(a); it != target_of.end() && r.saved[it->second].segment >= 0) {
          size_t other = size_t(r.saved[it->second].segment);
          if (other == k) continue;
          r.segments[k].conflicts.push_back(other);
          r.segments[other].conflicts.push_back(k);
        }
    // Each such pair is also offered as one segment (the softmax and its dropout: together they
    // free what neither frees alone), in conflict with both halves and their conflicts.
    for (size_t k = 0, n = r.segments.size(); k < n; ++k)
      for (size_t other : std::vector<size_t>(r.segments[k].conflicts)) {
        if (other < k || other >= n) continue;
        Segment both;
        both.targets = r.segments[k].targets;
        both.targets.insert(both.targets.end(), r.segments[other].targets.begin(), r.segments[other].targets.end());
        finish(r, both, walks, /*combined=*/true);
        if (both.ops.empty()) continue;
        size_t at_index = r.segments.size();
        both.conflicts = {k, other};
        for (size_t half : {k, other})
          for (size_t c : r.segments[half].conflicts)
            if (c != k && c != other) both.conflicts.push_back(c);
        for (size_t c : both.conflicts) r.segments[c].conflicts.push_back(at_index);
        r.segments.push_back(std::move(both));
      }
  }

  // `combined`: a pair offered as one segment; when it cannot be placed its ops are cleared and
  // the halves' records are left alone.
  void finish(RankSegments& r, Segment& s, const std::vector<RecomputeWalk>& walks, bool combined = false) {
    std::unordered_set<const Op*> ops;
    std::unordered_set<const Var*> targets, anchors;
    for (size_t ti : s.targets) {
      targets.insert(r.saved[ti].var);
      for (Op* op : walks[ti].ops)
        if (ops.insert(op).second) s.ops.push_back(op);
    }
    std::sort(s.ops.begin(), s.ops.end(), [&](const Op* a, const Op* b) { return entry_.isBefore(a, b); });
    s.insert_at = INT64_MAX;
    for (size_t ti : s.targets) s.insert_at = std::min(s.insert_at, r.saved[ti].first_bwd_at);
    s.insert_before = ops_[size_t(s.insert_at)];
    auto refuseAll = [&](std::string code, std::string reason) {
      if (combined) return s.ops.clear();
      for (size_t ti : s.targets) {
        r.saved[ti].refusal = {code, explaining_ ? reason : std::string()};
        r.saved[ti].segment = -1;
      }
    };
    for (size_t ti : s.targets)
      if (r.saved[ti].last_fwd_at >= s.insert_at)
        return refuseAll("read-after-backward", "a forward op reads what the segment makes after backward has begun");
    size_t first_at = at(s.ops.front());
    for (size_t ti : s.targets)
      for (Var* a : walks[ti].anchors)
        if (!targets.count(a) && anchors.insert(a).second) s.anchors.push_back(a);
    // A var written once holds one value; one written again between the segment and its copy
    // would hand the copy another value.
    for (Var* a : s.anchors)
      for (const Op* w : a->writers.size() > 1 ? a->writers : OpList{})
        if (w->block == &entry_ && at(w) > first_at && int64_t(at(w)) < s.insert_at)
          return refuseAll("input-overwritten", name(a) + " is overwritten by " + std::string(w->type) + " before the recompute");
    for (size_t ti : s.targets) s.bytes += varBytes(*r.saved[ti].var);
    for (const Op* op : s.ops) {
      s.flops += opFlops(*op);
      s.text += (s.text.empty() ? "" : " > ") + std::string(op->type);
      for (const Slot& sl : op->outputs)
        for (const Arg& a : sl.args)
          if (a.var && !targets.count(a.var)) s.temp_bytes += varBytes(*a.var);
    }
  }

  Program& p_;
  Block& entry_;
  const std::function<bool(const Op&)>& allowed_;
  bool explaining_, merge_;
  std::vector<RecomputeVarUse> use_;
  std::vector<Op*> ops_;
};

}  // namespace

RankSegments findSegments(Program& p, const std::function<bool(const Op&)>& allowed, bool explaining, bool merge_dependent) {
  if (!entryBlockOf(p)) return {};
  return SegmentFinder(p, allowed, explaining, merge_dependent).run();
}

}  // namespace spopt
