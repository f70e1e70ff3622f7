#include "analysis/op_match.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace spopt {

OpOrder::OpOrder(const Program& p) {
  index_of_id.assign(p.next_op_id, 0);
  for (const auto& b : p.blocks) {
    uint32_t position = 0;
    for (const Op& op : b->ops) {
      if (op.id >= index_of_id.size()) index_of_id.resize(op.id + 1, 0);
      index_of_id[op.id] = static_cast<uint32_t>(ops.size());
      ops.push_back({&op, static_cast<uint32_t>(ops.size()), position++});
    }
  }
}

namespace {

enum class KeyKind { Outputs, Inputs, Attrs };

// A string that two ops share exactly when they agree on block, type and the names in their
// output (or input) slots; every name is length-prefixed so that no two lists collide. Ops
// with no names at all are keyed by their attributes instead.
void appendName(std::string& key, std::string_view name) {
  key += std::to_string(name.size());
  key += ':';
  key += name;
}

std::string matchKey(const Op& op, KeyKind kind) {
  std::string key = std::to_string(op.block->idx);
  key += ' ';
  appendName(key, op.type);
  if (kind == KeyKind::Attrs) {
    for (const Member& m : op.attrs.items()) {
      appendName(key, m.key);
      appendName(key, m.raw);
    }
    return key;
  }
  const auto& slots = kind == KeyKind::Outputs ? op.outputs : op.inputs;
  for (const Slot& s : slots) {
    key += '|';
    for (const Arg& a : s.args) appendName(key, a.name);
  }
  return key;
}

bool hasArgs(const std::vector<Slot>& slots) {
  for (const Slot& s : slots)
    if (!s.args.empty()) return true;
  return false;
}

// A key made of no names would pair unrelated ops; attributes key only ops without any names.
bool keyApplies(const Op& op, KeyKind kind) {
  switch (kind) {
    case KeyKind::Outputs: return hasArgs(op.outputs);
    case KeyKind::Inputs: return hasArgs(op.inputs);
    case KeyKind::Attrs: return !hasArgs(op.outputs) && !hasArgs(op.inputs);
  }
  return false;
}

void matchRound(const OpOrder& before, const OpOrder& after, OpMatching& m, KeyKind kind) {
  // Unpaired BEFORE ops per key, as singly linked lists in program order (no allocation per key
  // beyond the map node: most keys are unique).
  struct Queue {
    uint32_t head, tail;
  };
  std::unordered_map<std::string, Queue> waiting;
  std::vector<uint32_t> next(before.ops.size(), OpMatching::kNone);
  waiting.reserve(before.ops.size());
  for (const OpSlot& s : before.ops) {
    if (m.after_of_before[s.index] != OpMatching::kNone || !keyApplies(*s.op, kind)) continue;
    auto [it, fresh] = waiting.try_emplace(matchKey(*s.op, kind), Queue{s.index, s.index});
    if (!fresh) {
      next[it->second.tail] = s.index;
      it->second.tail = s.index;
    }
  }
  for (const OpSlot& s : after.ops) {
    if (m.before_of_after[s.index] != OpMatching::kNone || !keyApplies(*s.op, kind)) continue;
    auto it = waiting.find(matchKey(*s.op, kind));
    if (it == waiting.end() || it->second.head == OpMatching::kNone) continue;
    uint32_t b = it->second.head;
    it->second.head = next[b];
    m.after_of_before[b] = s.index;
    m.before_of_after[s.index] = b;
  }
}

}  // namespace

OpMatching matchOps(const OpOrder& before, const OpOrder& after) {
  OpMatching m;
  m.after_of_before.assign(before.ops.size(), OpMatching::kNone);
  m.before_of_after.assign(after.ops.size(), OpMatching::kNone);
  matchRound(before, after, m, KeyKind::Outputs);
  matchRound(before, after, m, KeyKind::Inputs);
  matchRound(before, after, m, KeyKind::Attrs);
  return m;
}

}  // namespace spopt
