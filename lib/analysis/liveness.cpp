#include "analysis/liveness.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include <absl/functional/function_ref.h>

#include "analysis/op_facts.h"
#include "ops/op_view.h"
#include "ir/json_text.h"
#include "ir/op_role.h"
#include "ir/prefetch.h"

namespace spopt {

std::vector<int64_t> subBlocksOf(const Op& op) {
  std::vector<int64_t> out;
  if (auto raw = op.attrs.raw("sub_block"))
    if (auto v = rawToInt(*raw)) out.push_back(*v);
  if (auto raw = op.attrs.raw("blocks"))
    if (auto v = rawToIntArray(*raw)) out.insert(out.end(), v->begin(), v->end());
  return out;
}

namespace {

bool keptToEndGiven(const Var& v, bool written_by_loss);

enum UseKind : uint8_t { kRead = 1, kWrite = 2, kShapeRead = 4 };
struct Use {
  const Var* var;
  uint8_t kinds;
};

class LivenessBuilder {
 public:
  LivenessBuilder(const Program& p, const LivenessOptions& o) : p_(p), o_(o) {
    size_t nb = p.blocks.size();
    depth_.assign(nb, 0);
    for (const auto& b : p.blocks) {
      int d = 0;
      for (const Block* x = b->parent; x && d < 10000; x = x->parent) ++d;
      depth_[b->position] = d;
    }
    external_.resize(nb);
    state_.assign(nb, 0);
    vars_.assign(p.next_var_id, VarState{});
  }
  ~LivenessBuilder() {
    if (owns_shared_) shared_busy_ = false;
  }

  Liveness run() {
    Liveness l;
    l.blocks.resize(p_.blocks.size());
    for (const auto& b : p_.blocks) walk(*b, &l.blocks[b->position]);
    for (const auto& b : p_.blocks) {
      BlockLiveness& bl = l.blocks[b->position];
      bl.dies_after.assign(p_.next_var_id, -1);
      bl.born_at.start.assign(b->ops.size() + 1, 0);
      bl.release_after.start.assign(b->ops.size() + 1, 0);
    }
    // Two scans over the vars: count each op's births and deaths, then place them (flat lists,
    // var id order within an op).
    std::vector<uint8_t> dies(vars_.size(), 0);
    for (size_t id = 0; id < vars_.size(); ++id) {
      const VarState& s = vars_[id];
      if (!s.var || s.last < 0) continue;  // untouched or shape-only: no buffer
      BlockLiveness& bl = l.blocks[s.var->block->position];
      if (!s.var->persistable) {
        if (s.input) bl.live_on_entry.push_back(s.var);
        else ++bl.born_at.start[size_t(s.first_write) + 1];
      }
      if (keptToEndGiven(*s.var, s.loss_written)) continue;
      dies[id] = 1;
      ++bl.release_after.start[size_t(s.last) + 1];
      bl.dies_after[id] = s.last;
    }
    std::vector<std::vector<uint32_t>> born_fill(l.blocks.size()), release_fill(l.blocks.size());
    for (BlockLiveness& bl : l.blocks) {
      for (VarLists* lists : {&bl.born_at, &bl.release_after}) {
        for (size_t i = 1; i < lists->start.size(); ++i) lists->start[i] += lists->start[i - 1];
        lists->vars.resize(lists->start.empty() ? 0 : lists->start.back());
      }
    }
    for (size_t b = 0; b < l.blocks.size(); ++b) {
      born_fill[b].assign(l.blocks[b].born_at.start.begin(), l.blocks[b].born_at.start.end());
      release_fill[b].assign(l.blocks[b].release_after.start.begin(), l.blocks[b].release_after.start.end());
    }
    for (size_t id = 0; id < vars_.size(); ++id) {
      const VarState& s = vars_[id];
      if (!s.var || s.last < 0) continue;
      size_t b = s.var->block->position;
      BlockLiveness& bl = l.blocks[b];
      if (!s.var->persistable && !s.input) bl.born_at.vars[born_fill[b][size_t(s.first_write)]++] = s.var;
      if (dies[id]) bl.release_after.vars[release_fill[b][size_t(s.last)]++] = s.var;
    }
    return l;
  }

  // The entry block's buffers only (forEachEntryBuffer): its walk (and its sub-blocks'), no lists;
  // then one pass over its vars, in the order they were made (their ids' order, and the order of
  // their memory).
  void entryBuffers(const Block& entry, absl::FunctionRef<void(const Var&, int32_t, int32_t)> f) {
    BlockLiveness bl;
    walk(entry, &bl);
    for (const auto& owned : entry.vars) {
      const Var& v = *owned;
      if (v.removed) continue;
      if (v.persistable) {
        f(v, -1, -1);
        continue;
      }
      const VarState& s = vars_[v.id];
      if (!s.var || s.last < 0) continue;  // untouched or shape-only: no buffer
      f(v, s.input ? -1 : s.first_write, keptToEndGiven(v, s.loss_written) ? -1 : s.last);
    }
  }

 private:
  const Program& p_;
  const LivenessOptions& o_;
  std::vector<int> depth_;
  std::vector<std::vector<Use>> external_;  // [block position]: uses of vars declared outside its subtree
  std::vector<uint8_t> state_;              // 0 new, 1 in progress (cycle guard), 2 done
  // Per var id (each var belongs to one block, so one array serves every block); one record per
  // var, so that a use touches one cache line.
  struct VarState {
    const Var* var = nullptr;  // set at its block's first use of it
    int32_t last = -1;         // last buffer read or write, as an op index in its own block
    int32_t first_write = -1;  // when the first use is a write: its op index
    uint8_t touched = 0, written = 0, input = 0;
    uint8_t loss_written = 0;  // an op of the Loss phase writes it (keptToEnd's rule, one phaseOf per op)
  };
  // A thread's walks reuse one array (a pass walks each of its programs, a program of a million
  // ops has a million vars, and fresh pages cost a fault each); a builder made while another one
  // of the thread is alive gets one of its own.
  static inline thread_local std::vector<VarState> shared_vars_;
  static inline thread_local bool shared_busy_ = false;
  const bool owns_shared_ = !std::exchange(shared_busy_, true);
  std::vector<VarState> own_vars_;
  std::vector<VarState>& vars_ = owns_shared_ ? shared_vars_ : own_vars_;

  // The uses of block `b`'s subtree of vars declared outside it (computed once, memoised).
  const std::vector<Use>& externalUses(const Block& b) {
    if (state_[b.position] == 0) walk(b, nullptr);
    return external_[b.position];
  }

  // Walks block `b`: records its own vars' uses (when `out` is given: the first walk of each
  // block always gets one from run(), or is a nested call whose results run() then reuses), and
  // collects the uses it passes up to its parent.
  void walk(const Block& b, BlockLiveness* out) {
    if (state_[b.position] == 2) {
      if (out && !out->block) fill(b, out);
      return;
    }
    if (state_[b.position] == 1) return;  // a cycle of sub_block attrs: the verifier reports it
    state_[b.position] = 1;
    pending_[&b] = BlockLiveness{};
    BlockLiveness& bl = pending_[&b];
    bl.block = &b;
    std::vector<Use> ext;
    std::unordered_map<const Var*, size_t> ext_at;  // index in ext
    int32_t i = 0;
    // In a program of one block every var an op names is the block's own: the use is recorded by
    // the id the arg holds, without loading the Var (the walk's cache miss per arg).
    const bool one_block = p_.blocks.size() == 1;
    auto use = [&](const Var* v, uint32_t id, uint8_t kind) {
      if (one_block || v->block == &b) {
        VarState& st = vars_[id];
        st.var = v;
        if (!st.touched) {
          if (kind & kWrite) st.first_write = i;
          else bl.inputs.push_back(v), st.input = 1;
        }
        st.touched = 1;
        if (kind & kWrite) st.written = 1;
        if (kind & (kRead | kWrite)) st.last = i;
      } else if (depth_[v->block->position] < depth_[b.position]) {
        auto [it, fresh] = ext_at.try_emplace(v, ext.size());
        if (fresh) ext.push_back({v, 0});
        ext[it->second].kinds |= kind;
      }
    };
    const bool has_sub_blocks = p_.blocks.size() > 1;  // else no op's sub_block names another block
    const OpRange<const Op> in_order = b.inOrder();
    OpLookahead ahead(in_order);
    for (const Op& op : in_order) {
      ahead.next();
      const OpFacts* f = o_.facts ? &o_.facts->facts(op) : nullptr;
      const bool loss = (f ? f->phase : phaseOf(op)) == Phase::Loss;
      const uint32_t shape_only = f && !f->many_inputs ? f->shape_only_inputs : 0;
      std::optional<OpView> view;  // resolved once per op, not once per input slot (readsBuffer's rule)
      if (!f || f->many_inputs) view.emplace(op);
      for (size_t si = 0; si < op.inputs.size(); ++si) {
        const Slot& s = op.inputs[si];
        const bool reads = view ? view->readsBuffer(s.name) : !(shape_only >> si & 1);
        uint8_t kind = !o_.no_need_buffer || reads ? kRead : kShapeRead;
        for (const Arg& a : s.args)
          if (a.var) use(a.var, a.var.id(), kind);
      }
      for (const Slot& s : op.outputs)
        for (const Arg& a : s.args)
          if (a.var) {
            use(a.var, a.var.id(), kWrite);
            if (loss && a.var.id() < vars_.size()) vars_[a.var.id()].loss_written = 1;
          }
      if (!has_sub_blocks) {
        ++i;
        continue;
      }
      for (int64_t idx : subBlocksOf(op)) {
        const Block* sub = p_.block(idx);
        if (!sub || sub == &b) continue;
        // Reads before writes within the sub-block: a read-write of an outer var counts as a read
        // first (conservative for inputs).
        for (const Use& u : externalUses(*sub)) {
          if (u.kinds & (kRead | kShapeRead)) use(u.var, u.var->id, u.kinds & kRead ? kRead : kShapeRead);
          if (u.kinds & kWrite) use(u.var, u.var->id, kWrite);
        }
      }
      ++i;
    }
    external_[b.position] = std::move(ext);
    state_[b.position] = 2;
    if (out) fill(b, out);
  }

  void fill(const Block& b, BlockLiveness* out) {
    auto it = pending_.find(&b);
    *out = std::move(it->second);
    pending_.erase(it);
  }

  // Results of blocks walked first as sub-blocks, until run() asks for them. Node-based: a nested
  // walk inserts while an outer one holds a reference.
  std::unordered_map<const Block*, BlockLiveness> pending_;
};

// A program that names no fetches (Paddle's PIR test programs have no pd_op.fetch) keeps its
// results: the values it computes that nothing reads.
// `written_by_loss`: some writer of `v` is an op of the Loss phase.
bool keptToEndGiven(const Var& v, bool written_by_loss) {
  const Program& p = *v.block->program;
  if (v.persistable || p.fetches(v.name) || written_by_loss) return true;
  return p.fetch.empty() && !v.writers.empty() && v.readers.empty();
}

}  // namespace

bool keptToEnd(const Var& v) {
  return keptToEndGiven(v, std::any_of(v.writers.begin(), v.writers.end(), [](const Op* w) { return phaseOf(*w) == Phase::Loss; }));
}

const Block* entryBlockOf(const Program& p) {
  for (const auto& b : p.blocks)
    if (b->parent_idx < 0) return b.get();
  return p.blocks.empty() ? nullptr : p.blocks.front().get();
}

const BlockLiveness& Liveness::entry() const {
  for (const auto& b : blocks)
    if (b.block && b.block->parent_idx < 0) return b;
  return blocks.front();
}

Liveness computeProgramLiveness(const Program& p, const LivenessOptions& o) {
  if (p.blocks.empty()) return {};
  return LivenessBuilder(p, o).run();
}

void forEachEntryBuffer(const Program& p, const LivenessOptions& o, absl::FunctionRef<void(const Var&, int32_t, int32_t)> f) {
  if (const Block* entry = entryBlockOf(p)) LivenessBuilder(p, o).entryBuffers(*entry, f);
}

}  // namespace spopt
