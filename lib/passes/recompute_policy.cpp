#include "passes/recompute_policy.h"

#include <algorithm>

#include "ir/op_role.h"
#include "ops/op_view.h"
#include "support/error.h"

namespace spopt {
namespace {

std::string_view trimPatternText(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool isForwardOpForRecompute(const Op& op) { return phaseOf(op) == Phase::Forward; }

// The forward ops that read one of `op`'s outputs by buffer.
std::vector<Op*> forwardBufferReaders(const Op& op) {
  std::vector<Op*> out;
  for (const Slot& s : op.outputs)
    for (const Arg& a : s.args)
      if (a.var)
        for (Op* r : a.var->readers)
          if (isForwardOpForRecompute(*r) && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

// Marks every op on a path op = chain[k], ..., chain[end] through forward readers; true if any.
bool markPatternChain(Op& op, const OpPattern& chain, size_t k, std::vector<char>& marks) {
  if (resolveOp(op.type).def != chain[k] || !isForwardOpForRecompute(op)) return false;
  bool matched = k + 1 == chain.size();
  if (!matched)
    for (Op* r : forwardBufferReaders(op)) matched = markPatternChain(*r, chain, k + 1, marks) || matched;
  if (matched) marks[op.id] = 1;
  return matched;
}

// The single producer of `v`, when a forward op.
Op* singleForwardProducer(const Var* v) {
  return v && v->writers.size() == 1 && isForwardOpForRecompute(*v->writers.front()) ? v->writers.front() : nullptr;
}

bool readsNoBuffer(const Op& op) {
  for (const Slot& s : op.inputs)
    if (readsBuffer(op, s.name) && !s.args.empty()) return false;
  return true;
}

bool isActivationVar(const Var* v) { return v && !v->persistable; }

void markAttentionAround(Op& softmax, std::vector<char>& marks) {
  std::vector<Op*> found{&softmax};
  // Back to the scores GEMM, through pointwise ops (scale, an additive mask: their X).
  Op* p = singleForwardProducer(OpView(softmax).in("X"));
  while (p && !OpView(*p).has(trait::Blas) && OpView(*p).has(trait::Elementwise)) {
    found.push_back(p);
    p = singleForwardProducer(OpView(*p).in("X"));
  }
  if (!p || !OpView(*p).has(trait::Blas)) return;
  OpView qk(*p);
  if (!isActivationVar(qk.in("X")) || !isActivationVar(qk.in("Y"))) return;  // a weight GEMM, not QK^T
  found.push_back(p);
  // On to the GEMM that reads the probabilities, through pointwise and random ops (dropout).
  Op* next = &softmax;
  for (;;) {
    std::vector<Op*> readers = forwardBufferReaders(*next);
    if (readers.size() != 1) return;
    next = readers.front();
    OpView v(*next);
    if (v.has(trait::Blas)) break;
    if (!v.has(trait::Elementwise)) return;
    found.push_back(next);
  }
  found.push_back(next);
  // A fill the pointwise ops read (a causal mask's fill_any_like: it reads only a shape) belongs
  // to the attention too, else its output would have to live until the recompute.
  for (size_t i = 0, n = found.size(); i < n; ++i)
    for (const Slot& s : found[i]->inputs)
      for (const Arg& a : s.args)
        if (Op* fill = singleForwardProducer(a.var); fill && readsNoBuffer(*fill)) found.push_back(fill);
  for (Op* op : found) marks[op->id] = 1;
}

bool conflictsWithChosen(const Segment& s, const std::vector<char>& chosen) {
  for (size_t other : s.conflicts)
    if (chosen[other]) return true;
  return false;
}

BudgetChoice finishChoice(const RankSegments& r, LiveBytesTree& tree, std::vector<char> chosen, int64_t budget) {
  BudgetChoice c;
  c.chosen = std::move(chosen);
  for (size_t k = 0; k < r.segments.size(); ++k)
    if (c.chosen[k]) c.flops += r.segments[k].flops;
  c.peak = tree.peak();
  c.met = c.peak <= budget;
  return c;
}

}  // namespace

std::vector<OpPattern> parseOpPatterns(std::string_view text) {
  std::vector<OpPattern> out;
  auto bad = [&](const std::string& why) {
    throw InputError("--passes", "", "recompute-activations: ops=" + std::string(text) + ": " + why);
  };
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != ';') continue;
    std::string_view piece = trimPatternText(text.substr(start, i - start));
    start = i + 1;
    if (piece.empty()) bad("an empty pattern (patterns are op names joined by '>', separated by ';')");
    OpPattern chain;
    size_t s = 0;
    for (size_t j = 0; j <= piece.size(); ++j) {
      if (j < piece.size() && piece[j] != '>') continue;
      std::string_view name = trimPatternText(piece.substr(s, j - s));
      s = j + 1;
      const OpDef* def = findOpDef(name);
      if (!def) def = resolveOp(name).def;
      if (!def) bad("unknown op \"" + std::string(name) + "\"");
      chain.push_back(def);
    }
    out.push_back(std::move(chain));
  }
  return out;
}

std::vector<char> markPatternOps(const Program& p, const std::vector<OpPattern>& patterns) {
  std::vector<char> marks(p.next_op_id, 0);
  for (const auto& b : p.blocks)
    for (Op& op : b->ops)
      for (const OpPattern& chain : patterns) markPatternChain(op, chain, 0, marks);
  return marks;
}

std::vector<char> markCoreAttention(const Program& p) {
  std::vector<char> marks(p.next_op_id, 0);
  const OpDef& softmax = opDef("softmax");
  for (const auto& b : p.blocks)
    for (Op& op : b->ops)
      if (isA(op, softmax) && isForwardOpForRecompute(op)) markAttentionAround(op, marks);
  return marks;
}

BudgetChoice chooseGreedy(const RankSegments& r, int64_t budget) {
  LiveBytesTree tree(r.slots);
  std::vector<size_t> order(r.segments.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  auto perFlop = [&](size_t k) { return double(r.segments[k].bytes) / (r.segments[k].flops + 1.0); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return perFlop(a) > perFlop(b); });
  std::vector<char> chosen(r.segments.size(), 0);
  std::vector<size_t> taken;
  // A segment in conflict with chosen ones replaces them (a pair offered as one segment replacing
  // its cheaper half) when that lowers the peak.
  for (size_t k : order) {
    if (tree.peak() <= budget) break;
    int64_t before = tree.peak();
    std::vector<size_t> replaced;
    for (size_t other : r.segments[k].conflicts)
      if (chosen[other]) replaced.push_back(other), chosen[other] = 0, applySegmentModel(tree, r, r.segments[other], -1);
    applySegmentModel(tree, r, r.segments[k], +1);
    if (tree.peak() < before) {
      chosen[k] = 1, taken.push_back(k);
      continue;
    }
    applySegmentModel(tree, r, r.segments[k], -1);
    for (size_t other : replaced) chosen[other] = 1, applySegmentModel(tree, r, r.segments[other], +1);
  }
  if (tree.peak() <= budget)
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
      if (!chosen[*it]) continue;
      applySegmentModel(tree, r, r.segments[*it], -1);
      if (tree.peak() <= budget) chosen[*it] = 0;
      else applySegmentModel(tree, r, r.segments[*it], +1);
    }
  return finishChoice(r, tree, std::move(chosen), budget);
}

BudgetChoice chooseExact(const RankSegments& r, int64_t budget) {
  size_t n = r.segments.size();
  LiveBytesTree tree(r.slots);
  std::vector<char> state(n, 0), best;
  double flops = 0, best_flops = 0;
  int64_t best_peak = INT64_MAX;
  bool best_met = false;
  auto consider = [&]() {
    for (size_t k = 0; k < n; ++k)
      if (state[k] && conflictsWithChosen(r.segments[k], state)) return;
    int64_t peak = tree.peak();
    bool met = peak <= budget;
    bool better = best.empty() || (met && !best_met) ||
                  (met == best_met && (met ? (flops < best_flops || (flops == best_flops && peak < best_peak)) : peak < best_peak));
    if (better) best = state, best_flops = flops, best_peak = peak, best_met = met;
  };
  consider();
  for (uint64_t i = 1; n < 63 && i < (uint64_t(1) << n); ++i) {
    size_t k = size_t(__builtin_ctzll(i));
    int sign = state[k] ? -1 : +1;
    applySegmentModel(tree, r, r.segments[k], sign);
    state[k] = char(!state[k]);
    flops += sign * r.segments[k].flops;
    consider();
  }
  LiveBytesTree chosen_tree(r.slots);
  for (size_t k = 0; k < n; ++k)
    if (best[k]) applySegmentModel(chosen_tree, r, r.segments[k], +1);
  return finishChoice(r, chosen_tree, std::move(best), budget);
}

}  // namespace spopt
