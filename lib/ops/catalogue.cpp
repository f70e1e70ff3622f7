// The catalogue: the definitions of every family, indexed by every spelling and canonical name.
#include <array>
#include <cstdint>
#include <deque>
#include <stdexcept>

#include <absl/container/flat_hash_map.h>

#include "ir/json_text.h"
#include "ops/rule_support.h"

namespace spopt {

namespace {

struct Catalogue {
  std::deque<OpDef> defs;  // stable addresses
  std::vector<const OpDef*> list;
  absl::flat_hash_map<std::string_view, ResolvedOp> by_type;
  absl::flat_hash_map<std::string_view, const OpDef*> by_name;
};

const Catalogue& catalogue() {
  static const Catalogue c = [] {
    std::vector<OpDef> defs;
    ops::addMathOps(defs);
    ops::addNormOps(defs);
    ops::addShapeOps(defs);
    ops::addReduceOps(defs);
    ops::addMiscOps(defs);
    ops::addTrainOps(defs);
    ops::addCollectiveOps(defs);
    ops::addVisionOps(defs);
    ops::addAmpOps(defs);
    ops::addLlamaOps(defs);
    ops::addIndexOps(defs);
    ops::addUpsampleOps(defs);
    Catalogue cat;
    for (OpDef& d : defs) {
      d.index = uint32_t(cat.defs.size());
      cat.defs.push_back(std::move(d));
    }
    for (const OpDef& d : cat.defs) {
      cat.list.push_back(&d);
      if (!cat.by_name.emplace(d.name, &d).second) throw std::logic_error("op catalogue: two definitions named " + std::string(d.name));
      for (const Spelling& s : d.spellings)
        if (!cat.by_type.emplace(s.type, ResolvedOp{&d, &s}).second)
          throw std::logic_error("op catalogue: " + std::string(s.type) + " spells two ops");
    }
    return cat;
  }();
  return c;
}

}  // namespace

bool attrReadsAs(std::string_view raw, AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return rawToIntLenient(raw).has_value();
    case AttrKind::Float: return rawToNumber(raw).has_value();
    case AttrKind::Bool: return rawToBoolLenient(raw).has_value();
    case AttrKind::String: return rawToString(raw).has_value();
    case AttrKind::Ints: return rawToIntsLenient(raw).has_value();
    case AttrKind::DType: return dtypeFromAttr(raw).has_value();
    case AttrKind::Numbers: return rawToNumberArray(raw).has_value();
  }
  return false;
}

const char* attrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "an integer";
    case AttrKind::Float: return "a number";
    case AttrKind::Bool: return "a boolean";
    case AttrKind::String: return "a string";
    case AttrKind::Ints: return "a list of integers";
    case AttrKind::DType: return "a dtype (a Paddle dtype code or a name)";
    case AttrKind::Numbers: return "a list of numbers";
  }
  return "?";
}

const OperandDef* OpDef::input(std::string_view canonical) const {
  for (const OperandDef& o : inputs)
    if (o.name == canonical) return &o;
  return nullptr;
}
const OperandDef* OpDef::output(std::string_view canonical) const {
  for (const OperandDef& o : outputs)
    if (o.name == canonical) return &o;
  return nullptr;
}
const AttrDef* OpDef::attr(std::string_view canonical) const {
  for (const AttrDef& a : attrs)
    if (a.name == canonical) return &a;
  return nullptr;
}
const Spelling* OpDef::spelling(Dialect d) const {
  // The first spelling of the dialect (an in-place one where that is how Paddle writes the op:
  // pd_op.all_reduce_, pd_op.sgd_). Compute ops have one spelling for legacy and current programs.
  for (Dialect want : {d, Dialect::Legacy})
    for (const Spelling& s : spellings)
      if (s.dialect == want && (d != Dialect::Pir || want == Dialect::Pir)) return &s;
  return nullptr;
}

ResolvedOp resolveOp(std::string_view type) {
  // The loaders intern op types (one copy of each per job and thread), and every analysis resolves
  // every op again: a small per-thread cache by the text's address skips hashing it. A hit is
  // confirmed against the catalogue's own spelling, so an address reused for other text misses.
  struct Entry {
    const char* data = nullptr;
    ResolvedOp r;
  };
  thread_local std::array<Entry, 64> cache;
  Entry& e = cache[(reinterpret_cast<uintptr_t>(type.data()) >> 4) & 63];
  if (e.data && e.data == type.data() && e.r.spelling->type == type) return e.r;
  const auto& m = catalogue().by_type;
  auto it = m.find(type);
  if (it == m.end()) return ResolvedOp{};
  e = {type.data(), it->second};
  return it->second;
}

const OpDef* findOpDef(std::string_view name) {
  const auto& m = catalogue().by_name;
  auto it = m.find(name);
  return it == m.end() ? nullptr : it->second;
}

const OpDef& opDef(std::string_view name) {
  const OpDef* d = findOpDef(name);
  if (!d) throw std::logic_error("op catalogue: no op " + std::string(name));
  return *d;
}

const std::vector<const OpDef*>& allOpDefs() { return catalogue().list; }

std::string_view slotName(const OperandDef& o, Dialect d, bool input) {
  // PIR's positional names, made once: lookups on the verifier's and replay's paths allocate nothing.
  static const auto names = [] {
    std::array<std::array<std::string, 64>, 2> n;
    for (size_t i = 0; i < 64; ++i) n[0][i] = "in" + std::to_string(i), n[1][i] = "out" + std::to_string(i);
    return n;
  }();
  switch (d) {
    case Dialect::Legacy: return o.name;
    case Dialect::Current: return o.current.empty() ? o.name : o.current;
    case Dialect::Pir:
      if (o.pir < 0 || o.pir >= 64) return {};
      return names[input ? 0 : 1][size_t(o.pir)];
  }
  return o.name;
}

Dialect inferDialect(const Program& p, Dialect fallback) {
  std::optional<Dialect> first_collective;
  for (const auto& b : p.blocks)
    for (const Op& op : b->ops) {
      ResolvedOp r = resolveOp(op.type);
      Dialect d = r ? r.spelling->dialect : (op.type.starts_with("pd_op.") || op.type.starts_with("builtin.") ? Dialect::Pir : Dialect::Legacy);
      if (d == Dialect::Pir) return Dialect::Pir;
      if (!first_collective && r && r.def->collective && r.def->collective != CollectiveKind::Identity &&
          r.def->collective != CollectiveKind::KernelAllReduce)
        first_collective = d;
    }
  return first_collective.value_or(fallback);
}

void inferDialects(Job& job) {
  for (auto& p : job.programs) p->dialect = inferDialect(*p);
}

}  // namespace spopt
