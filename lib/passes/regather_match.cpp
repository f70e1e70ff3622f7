#include "passes/regather_match.h"

#include <algorithm>

#include "analysis/liveness.h"
#include "analysis/memory.h"
#include "ops/op_view.h"
#include "ops/op_builder.h"
#include "ir/op_role.h"

namespace spopt {

BlockOwners::BlockOwners(const Program& p) : owner_(p.blocks.size(), nullptr) {
  auto own = [&](int64_t idx, const Op& op) {
    if (const Block* b = p.block(idx); b && b != op.block && !owner_[b->position]) owner_[b->position] = &op;
  };
  if (p.blocks.size() < 2) return;  // no sub-blocks: skip reading every op's attrs
  for (const auto& b : p.blocks)
    for (const Op& op : b->ops) {
      if (auto v = op.attrs.getInt("sub_block")) own(*v, op);
      if (auto v = op.attrs.getIntArray("blocks"))
        for (int64_t idx : *v) own(idx, op);
    }
}

const Op* BlockOwners::anchorIn(const Op* op, const Block* b) const {
  // Bounded by the block count: a cycle of sub_block attrs (the verifier's business) cannot loop.
  for (size_t steps = 0; op && steps <= owner_.size(); ++steps) {
    if (op->block == b) return op;
    op = owner_[op->block->position];
  }
  return nullptr;
}

bool isBackwardOp(const Op& op) { return isBackward(phaseOf(op)); }

namespace {

bool readsAnyBuffer(const Op& op, const Var* v) {
  for (const Slot& s : op.inputs)
    for (const Arg& a : s.args)
      if (a.var == v && readsBuffer(op, s.name)) return true;
  return false;
}

RegatherResult refuse(std::string code, std::string reason) {
  RegatherResult r;
  r.candidate = true;
  r.refusal = {std::move(code), std::move(reason)};
  return r;
}

}  // namespace

RegatherResult matchRegather(Op& ag, const Collective& coll, const BlockOwners& owners, bool explaining) {
  RegatherResult none;
  if (coll.kind != CollectiveKind::AllGather || isBackwardOp(ag) || phaseOf(ag) == Phase::Optimize) return none;
  Var* s = ag.in(coll.in_slot);
  Var* g = ag.out(coll.out_slot);
  if (!s || !g || ag.inputCount(coll.in_slot) != 1 || ag.outputCount(coll.out_slot) != 1) return none;
  auto name = [&](const Var* v) { return explaining ? std::string(v->name) : std::string(); };
  const Program& prog = *ag.block->program;
  if (g->persistable || prog.fetches(g->name)) return refuse("output-kept", name(g) + " is persistable or fetched: it lives to the end anyway");
  if (g->writers.size() != 1) return refuse("output-rewritten", name(g) + " is written by another op too");
  const Block* home = ag.block;

  RegatherMatch m;
  m.allgather = &ag;
  m.coll = coll;
  m.shard = s;
  m.gathered = g;
  // Readers of G: backward buffer readers (redirected), forward ones (keep G).
  const Op* last_fwd = &ag;
  for (Op* r : g->readers) {
    if (std::find(m.backward_readers.begin(), m.backward_readers.end(), r) != m.backward_readers.end()) continue;
    const Op* a = owners.anchorIn(r, home);
    if (!a) return refuse("reader-outside", name(g) + " is read by " + std::string(r->type) + " outside the all-gather's block");
    if (!isBackwardOp(*r)) {
      if (readsAnyBuffer(*r, g) && home->isBefore(last_fwd, a)) last_fwd = a;
      continue;
    }
    if (readsAnyBuffer(*r, g)) m.backward_readers.push_back(r);
  }
  if (m.backward_readers.empty()) return refuse("no-backward-reader", "no backward op reads " + name(g) + "'s buffer");
  if (last_fwd == &ag) return refuse("no-forward-reader", "no forward op reads " + name(g) + ": nothing to free");

  // The insertion point: the first backward reader, by where it runs in the all-gather's block.
  const Op* first_anchor = nullptr;
  Op* first = nullptr;
  const Op* last_bwd_anchor = nullptr;
  bool one_block = true;
  for (Op* r : m.backward_readers) {
    const Op* a = owners.anchorIn(r, home);
    one_block = one_block && r->block == m.backward_readers.front()->block;
    if (!first_anchor || home->isBefore(a, first_anchor) || (a == first_anchor && r->block == first->block && r->block->isBefore(r, first))) {
      first_anchor = a;
      first = r;
    }
    if (!last_bwd_anchor || home->isBefore(last_bwd_anchor, a)) last_bwd_anchor = a;
  }
  m.insert_before = one_block ? first : const_cast<Op*>(first_anchor);
  if (!home->isBefore(last_fwd, first_anchor))
    return refuse("read-after-backward", "a forward op reads " + name(g) + " after its first backward reader");
  if (m.insert_before->block->lookup(s->name) != s)
    return refuse("shard-not-visible", name(s) + " is not visible where the re-gather would go");

  // The shard must be intact from the forward all-gather to the insertion point.
  for (const Op* w : s->writers) {
    const Op* a = owners.anchorIn(w, home);
    if (w == m.insert_before) continue;  // writes S after reading it there: the re-gather runs first
    if (!a) return refuse("shard-written-outside", name(s) + " is written by " + std::string(w->type) + " outside the all-gather's block");
    if (home->isBefore(a, &ag) && a != first_anchor) continue;  // written before the forward all-gather
    if (home->isBefore(first_anchor, a)) continue;              // written after the re-gather
    if (a == &ag) continue;
    return refuse("shard-overwritten", name(s) + " is overwritten by " + std::string(w->type) +
                                           " between the forward all-gather and its first backward reader");
  }

  const Block* entry = entryBlockOf(prog);
  if (s->block == entry && g->block == entry) {
    auto at = [&](const Op* op) { return int64_t(entry->indexOf(owners.anchorIn(op, entry))); };
    m.ag_at = at(&ag);
    m.last_fwd_at = at(last_fwd);
    m.insert_at = at(m.insert_before);
    m.last_bwd_at = at(last_bwd_anchor);
  }
  RegatherResult r;
  r.candidate = true;
  r.match = std::move(m);
  return r;
}

void applyRegatherModel(LiveBytesTree& tree, const std::vector<int32_t>& dies, const RegatherMatch& m, int sign) {
  int64_t g = varBytes(*m.gathered), s = varBytes(*m.shard);
  int64_t g_death = dies[m.gathered->id] < 0 ? int64_t(1) << 40 : dies[m.gathered->id];
  tree.add(m.last_fwd_at + 1, g_death, -sign * g);
  tree.add(m.insert_at, m.last_bwd_at, sign * g);
  if (dies[m.shard->id] >= 0) tree.add(dies[m.shard->id] + 1, m.insert_at - 1, sign * s);
}

void rewriteRegather(const RegatherMatch& m) {
  Op& ag = *m.allgather;
  OpBuilder b(*m.insert_before->block);
  Var* g = m.gathered;
  Var* fresh = b.freshVar(std::string(g->name) + "@regather", g->shape, g->dtype, g);
  // nranks 0: the attrs, nranks included when present, come from the forward all-gather.
  NewOp op = b.collective({CollectiveKind::AllGather, m.coll.ring_id, 0}, m.shard, fresh);
  for (const Member& a : ag.attrs.items()) op.op().attrs.setRaw(b.job().editArena(), a.key, a.raw);  // names as the forward's
  op.phase(Phase::Backward);
  if (ag.hasDistAttr()) op.copyDistAttr(ag.dist_attr);
  op.insertBefore(*m.insert_before);
  for (Op* r : m.backward_readers)
    for (Slot& s : r->inputs)
      for (size_t i = 0; i < s.args.size(); ++i)
        if (s.args[i].var == g) setInputArg(*r, s.name, i, fresh);
}

}  // namespace spopt
