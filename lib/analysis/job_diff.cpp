#include "analysis/job_diff.h"

#include <algorithm>
#include <set>

#include "io/pir/pir_names.h"
#include "ir/json_text.h"
#include "support/error.h"

namespace spopt {

std::string compactJson(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool in_string = false, escaped = false;
  for (char c : raw) {
    if (in_string) {
      out += c;
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      out += c;
    }
  }
  return out;
}

namespace {

using Changes = std::vector<ValueChange>;
using MaybeText = std::optional<std::string>;

void note(Changes& out, std::string what, MaybeText before, MaybeText after) {
  if (before != after) out.push_back({std::move(what), std::move(before), std::move(after)});
}

std::string argsJson(const Slot& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (i) out += ',';
    out += quoteJson(s.args[i].name);
  }
  return out + "]";
}

// Slots are compared by name: a rewrite that reorders slots changes nothing that runs.
void compareSlots(Changes& out, std::string_view prefix, const std::vector<Slot>& before,
                  const std::vector<Slot>& after) {
  auto find = [](const std::vector<Slot>& slots, std::string_view name) -> const Slot* {
    for (const Slot& s : slots)
      if (s.name == name) return &s;
    return nullptr;
  };
  auto sameArgs = [](const Slot& x, const Slot& y) {
    if (x.args.size() != y.args.size()) return false;
    for (size_t i = 0; i < x.args.size(); ++i)
      if (x.args[i].name != y.args[i].name) return false;
    return true;
  };
  for (const Slot& b : before) {
    const Slot* a = find(after, b.name);
    if (a && sameArgs(b, *a)) continue;
    note(out, std::string(prefix) + "." + std::string(b.name), argsJson(b), a ? MaybeText(argsJson(*a)) : std::nullopt);
  }
  for (const Slot& a : after)
    if (!find(before, a.name)) note(out, std::string(prefix) + "." + std::string(a.name), std::nullopt, argsJson(a));
}

// Members compared by key, values as JSON values (so 1 and 1.0 differ, as the format keeps them apart,
// while -1e+09 and -1000000000.0 are one float spelled two ways).
void compareObjects(Changes& out, std::string_view prefix, const JsonObject& before, const JsonObject& after) {
  // Unedited loaded objects are compact text: equal text, equal objects, without splitting them.
  if (!before.compactText().empty() && before.compactText() == after.compactText()) return;
  auto path = [&](std::string_view key) { return std::string(prefix) + "." + std::string(key); };
  for (const Member& m : before.items()) {
    const std::string_view* a = after.find(m.key);
    if (a && (*a == m.raw || rawSameValue(*a, m.raw))) continue;  // equal text first: no parsing
    note(out, path(m.key), compactJson(m.raw), a ? MaybeText(compactJson(*a)) : std::nullopt);
  }
  for (const Member& m : after.items())
    if (!before.has(m.key)) note(out, path(m.key), std::nullopt, compactJson(m.raw));
}

// An optional object (dist_attr): gained or lost whole, else compared member by member.
void compareOptionalObject(Changes& out, std::string_view name, bool before_has, const JsonObject& before,
                           bool after_has, const JsonObject& after) {
  if (!before_has && !after_has) return;
  if (before_has != after_has) {
    note(out, std::string(name), before_has ? MaybeText(compactJson(before.toJson())) : std::nullopt,
         after_has ? MaybeText(compactJson(after.toJson())) : std::nullopt);
    return;
  }
  compareObjects(out, name, before, after);
}

// How a PIR file spelled an op or value (attribute types, the type text, the value number): the
// importer keeps them to write the same file again; they are no part of the program, so a job
// sent through a PIR file and back compares equal to the job it came from.
bool pirSpelling(std::string_view key) { return key == pir::kOpKey || key == pir::kVarTypeKey || key == pir::kVarValueKey; }

// Keys this build does not know, kept raw by the loader (PIR spellings aside).
void compareUnknownFields(Changes& out, std::string_view prefix, const Fields& before, const Fields& after) {
  auto find = [](const Fields& fs, std::string_view key) -> const Field* {
    for (const Field& f : fs)
      if (f.key == key) return &f;
    return nullptr;
  };
  auto path = [&](std::string_view key) { return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key); };
  for (const Field& f : before) {
    if (f.known() || pirSpelling(f.key)) continue;
    const Field* a = find(after, f.key);
    note(out, path(f.key), compactJson(f.raw), a && !a->known() ? MaybeText(compactJson(a->raw)) : std::nullopt);
  }
  for (const Field& f : after) {
    if (f.known() || pirSpelling(f.key)) continue;
    const Field* b = find(before, f.key);
    if (!b || b->known()) note(out, path(f.key), std::nullopt, compactJson(f.raw));
  }
}

Changes compareOps(const Op& b, const Op& a) {
  Changes out;
  compareSlots(out, "inputs", b.inputs, a.inputs);
  compareSlots(out, "outputs", b.outputs, a.outputs);
  compareObjects(out, "attrs", b.attrs, a.attrs);
  compareOptionalObject(out, "dist_attr", b.hasDistAttr(), b.dist_attr, a.hasDistAttr(), a.dist_attr);
  compareUnknownFields(out, "", b.fields, a.fields);
  return out;
}

Changes compareVars(const Var& b, const Var& a) {
  Changes out;
  note(out, "shape", intArrayToRaw(b.shape), intArrayToRaw(a.shape));
  note(out, "dtype", quoteJson(dtypeName(b.dtype)), quoteJson(dtypeName(a.dtype)));
  note(out, "persistable", b.persistable ? "true" : "false", a.persistable ? "true" : "false");
  compareOptionalObject(out, "dist_attr", b.hasDistAttr(), b.dist_attr, a.hasDistAttr(), a.dist_attr);
  compareUnknownFields(out, "", b.fields, a.fields);
  return out;
}

// Kept ops whose relative order changed: all but a longest increasing run of AFTER positions
// taken in BEFORE order (patience sorting, O(n log n)).
std::vector<bool> movedAfterOps(const OpMatching& m) {
  std::vector<uint32_t> seq;  // AFTER indices of kept ops, in BEFORE order
  for (uint32_t a : m.after_of_before)
    if (a != OpMatching::kNone) seq.push_back(a);
  std::vector<size_t> tails, prev(seq.size(), SIZE_MAX);
  for (size_t i = 0; i < seq.size(); ++i) {
    auto it = std::lower_bound(tails.begin(), tails.end(), seq[i], [&](size_t t, uint32_t v) { return seq[t] < v; });
    if (it != tails.begin()) prev[i] = *(it - 1);
    if (it == tails.end())
      tails.push_back(i);
    else
      *it = i;
  }
  std::vector<bool> moved(m.before_of_after.size(), false);
  for (uint32_t a : seq) moved[a] = true;
  for (size_t i = tails.empty() ? SIZE_MAX : tails.back(); i != SIZE_MAX; i = prev[i]) moved[seq[i]] = false;
  return moved;
}

// Removed ops are listed where they stood, like diff -u: a run of removed ops comes before the
// ops added in the same gap between kept ops.
void listOps(RankDiff& d) {
  const OpMatching& m = d.matching;
  std::vector<bool> moved = movedAfterOps(m);
  const uint32_t n_before = static_cast<uint32_t>(d.before_order->ops.size());
  // For each AFTER op, the BEFORE index of the first kept, unmoved op at or after it.
  std::vector<uint32_t> next_kept(d.after_order->ops.size() + 1, n_before);
  for (size_t a = d.after_order->ops.size(); a-- > 0;) {
    uint32_t b = m.before_of_after[a];
    next_kept[a] = b != OpMatching::kNone && !moved[a] ? b : next_kept[a + 1];
  }
  uint32_t next_before = 0;
  auto flushRemovedUpTo = [&](uint32_t end) {
    for (; next_before < end; ++next_before)
      if (m.after_of_before[next_before] == OpMatching::kNone)
        d.ops.push_back({OpEntry::Removed, next_before, OpMatching::kNone, {}, false});
  };
  for (const OpSlot& s : d.after_order->ops) {
    uint32_t b = m.before_of_after[s.index];
    if (b == OpMatching::kNone) {
      flushRemovedUpTo(next_kept[s.index]);
      d.ops.push_back({OpEntry::Added, OpMatching::kNone, s.index, {}, false});
      continue;
    }
    if (!moved[s.index]) {
      flushRemovedUpTo(b);
      next_before = std::max(next_before, b + 1);
    }
    Changes changes = compareOps(*d.before_order->ops[b].op, *s.op);
    if (changes.empty() && !moved[s.index]) {
      ++d.unchanged_ops;
      continue;
    }
    d.ops.push_back({OpEntry::Changed, b, s.index, std::move(changes), moved[s.index]});
  }
  flushRemovedUpTo(n_before);
}

void listVars(RankDiff& d) {
  auto blockOf = [](const Program* p, int64_t idx) -> const Block* { return p ? p->block(idx) : nullptr; };
  auto live = [](const Var* v) { return v && !v->removed ? v : nullptr; };
  if (d.before)
    for (const auto& b : d.before->blocks) {
      const Block* other = blockOf(d.after, b->idx);
      for (const auto& v : b->vars)
        if (!v->removed && !(other && live(other->findLocal(v->name))))
          d.vars.push_back({VarEntry::Removed, v.get(), nullptr, {}});
    }
  if (d.after)
    for (const auto& a : d.after->blocks) {
      const Block* other = blockOf(d.before, a->idx);
      for (const auto& v : a->vars) {
        if (v->removed) continue;
        const Var* b = other ? live(other->findLocal(v->name)) : nullptr;
        if (!b) {
          d.vars.push_back({VarEntry::Added, nullptr, v.get(), {}});
        } else if (Changes c = compareVars(*b, *v); !c.empty()) {
          d.vars.push_back({VarEntry::Changed, b, v.get(), std::move(c)});
        }
      }
    }
}

std::string fetchJson(const Program& p) {
  std::vector<std::string> names(p.fetch.begin(), p.fetch.end());
  return stringArrayToRaw(names);
}

void compareProgramShells(RankDiff& d) {
  Changes& out = d.program_changes;
  std::string rank_json = "{\"rank\":" + std::to_string(d.rank) + "}";
  if (!d.before || !d.after) {
    note(out, "program", d.before ? MaybeText(rank_json) : std::nullopt, d.after ? MaybeText(rank_json) : std::nullopt);
    return;
  }
  note(out, "fetch", fetchJson(*d.before), fetchJson(*d.after));
  compareUnknownFields(out, "", d.before->fields, d.after->fields);
  for (const auto& b : d.before->blocks) {
    std::string path = "blocks[" + std::to_string(b->idx) + "]";
    const Block* a = d.after->block(b->idx);
    if (!a) {
      note(out, path, "{\"idx\":" + std::to_string(b->idx) + "}", std::nullopt);
      continue;
    }
    note(out, path + ".parent_idx", std::to_string(b->parent_idx), std::to_string(a->parent_idx));
    compareUnknownFields(out, path, b->fields, a->fields);
  }
  for (const auto& a : d.after->blocks)
    if (!d.before->block(a->idx))
      note(out, "blocks[" + std::to_string(a->idx) + "]", std::nullopt, "{\"idx\":" + std::to_string(a->idx) + "}");
}

RankDiff diffRank(int64_t rank, const Program* before, const Program* after) {
  RankDiff d;
  d.rank = rank;
  d.before = before;
  d.after = after;
  d.before_order = before ? std::make_unique<OpOrder>(*before) : std::make_unique<OpOrder>();
  d.after_order = after ? std::make_unique<OpOrder>(*after) : std::make_unique<OpOrder>();
  d.matching = matchOps(*d.before_order, *d.after_order);
  compareProgramShells(d);
  listOps(d);
  listVars(d);
  if (before) d.comm_before = commStats(*before);
  if (after) d.comm_after = commStats(*after);
  return d;
}

std::string groupJson(const ProcessGroup& g) {
  return "{\"ring_id\":" + std::to_string(g.ring_id) + ",\"ranks\":" + intArrayToRaw(g.ranks) + "}";
}

void compareJobShells(JobDiff& d) {
  Changes& out = d.job_changes;
  const Job& b = *d.before;
  const Job& a = *d.after;
  note(out, "version", std::to_string(b.version), std::to_string(a.version));
  note(out, "world_size", std::to_string(b.world_size), std::to_string(a.world_size));
  for (const ProcessGroup& g : b.groups) {
    std::string path = "process_groups[ring " + std::to_string(g.ring_id) + "]";
    const ProcessGroup* other = a.group(g.ring_id);
    if (!other)
      note(out, path, groupJson(g), std::nullopt);
    else {
      note(out, path + ".ranks", intArrayToRaw(g.ranks), intArrayToRaw(other->ranks));
      compareUnknownFields(out, path, g.fields, other->fields);
    }
  }
  for (const ProcessGroup& g : a.groups)
    if (!b.group(g.ring_id)) note(out, "process_groups[ring " + std::to_string(g.ring_id) + "]", std::nullopt, groupJson(g));
  compareUnknownFields(out, "", b.fields, a.fields);
}

}  // namespace

const Op* RankDiff::beforeOp(const OpEntry& e) const {
  return e.before == OpMatching::kNone ? nullptr : before_order->ops[e.before].op;
}
const Op* RankDiff::afterOp(const OpEntry& e) const {
  return e.after == OpMatching::kNone ? nullptr : after_order->ops[e.after].op;
}

std::map<std::string, RankDiff::TypeCounts> RankDiff::countsByType() const {
  std::map<std::string, TypeCounts> counts;
  for (const OpEntry& e : ops) {
    const Op* op = e.kind == OpEntry::Removed ? beforeOp(e) : afterOp(e);
    TypeCounts& c = counts[std::string(op->type)];
    if (e.kind == OpEntry::Removed) ++c.removed;
    else if (e.kind == OpEntry::Added) ++c.added;
    else ++c.changed;
  }
  return counts;
}

std::string summarizeCounts(const std::map<std::string, RankDiff::TypeCounts>& counts) {
  std::string out;
  auto add = [&](char sign, int64_t n, const std::string& type) {
    if (n == 0) return;
    if (!out.empty()) out += ", ";
    out += sign + std::to_string(n) + " " + type;
  };
  for (const auto& [type, c] : counts) add('-', c.removed, type);
  for (const auto& [type, c] : counts) add('+', c.added, type);
  for (const auto& [type, c] : counts) add('~', c.changed, type);
  return out;
}

bool JobDiff::same() const {
  if (!job_changes.empty()) return false;
  for (const RankDiff& r : ranks)
    if (!r.same()) return false;
  return true;
}

std::map<std::string, RankDiff::TypeCounts> JobDiff::totalCountsByType() const {
  std::map<std::string, RankDiff::TypeCounts> total;
  for (const RankDiff& r : ranks)
    for (const auto& [type, c] : r.countsByType()) {
      auto& t = total[type];
      t.removed += c.removed;
      t.added += c.added;
      t.changed += c.changed;
    }
  return total;
}

JobDiff diffJobs(const Job& before, const Job& after, const DiffOptions& opts) {
  JobDiff d;
  d.before = &before;
  d.after = &after;
  d.bus_factors = opts.bus_factors;
  compareJobShells(d);
  std::set<int64_t> ranks;
  for (const auto& p : before.programs) ranks.insert(p->rank);
  for (const auto& p : after.programs) ranks.insert(p->rank);
  if (opts.rank && !ranks.count(*opts.rank))
    throw InputError(before.path, "", "--rank " + std::to_string(*opts.rank) + ": neither job has a program for rank " +
                                          std::to_string(*opts.rank));
  for (int64_t r : ranks)
    if (!opts.rank || *opts.rank == r) d.ranks.push_back(diffRank(r, before.program(r), after.program(r)));
  return d;
}

}  // namespace spopt
