#include "views/diff_json.h"

#include <nlohmann/json.hpp>

#include "io/writer.h"
#include "ir/json_pointer.h"
#include "views/describe.h"

namespace spopt {
namespace {

using Json = nlohmann::ordered_json;

Json rawValue(const std::optional<std::string>& raw) {
  if (!raw) return nullptr;
  return Json::parse(*raw);
}

Json changesJson(const std::vector<ValueChange>& changes) {
  Json out = Json::array();
  for (const ValueChange& c : changes)
    out.push_back(Json{{"what", c.what}, {"before", rawValue(c.before)}, {"after", rawValue(c.after)}});
  return out;
}

Json slotsJson(const std::vector<Slot>& slots) {
  Json out = Json::object();
  for (const Slot& s : slots) {
    Json names = Json::array();
    for (const Arg& a : s.args) names.push_back(std::string(a.name));
    out[std::string(s.name)] = std::move(names);
  }
  return out;
}

Json commJson(const CommStats& s) {
  Json kinds = Json::object();
  for (const auto& [kind, n] : s.by_kind) kinds[collectiveKindName(kind)] = n;
  return Json{{"count", s.count},
              {"payload_bytes", s.payload_bytes},
              {"ring_bytes", s.ring_bytes},
              {"unknown_size", s.unknown_size},
              {"by_kind", std::move(kinds)}};
}

Json countsJson(const std::map<std::string, RankDiff::TypeCounts>& counts) {
  Json out = Json::object();
  for (const auto& [type, c] : counts)
    out[type] = Json{{"removed", c.removed}, {"added", c.added}, {"changed", c.changed}};
  return out;
}

Json opJson(const RankDiff& r, const OpEntry& e) {
  static const char* kinds[] = {"removed", "added", "changed"};
  const OpSlot* b = e.before == OpMatching::kNone ? nullptr : &r.before_order->ops[e.before];
  const OpSlot* a = e.after == OpMatching::kNone ? nullptr : &r.after_order->ops[e.after];
  const Op& op = a ? *a->op : *b->op;
  Json j{{"change", kinds[e.kind]}, {"type", std::string(op.type)}};
  j["before"] = b ? Json(opPointerAt(*b->op, b->position)) : Json(nullptr);
  j["after"] = a ? Json(opPointerAt(*a->op, a->position)) : Json(nullptr);
  j["inputs"] = slotsJson(op.inputs);
  j["outputs"] = slotsJson(op.outputs);
  if (e.kind == OpEntry::Changed) {
    j["moved"] = e.moved;
    j["changes"] = changesJson(e.changes);
  }
  return j;
}

Json varJson(const VarEntry& v) {
  static const char* kinds[] = {"removed", "added", "changed"};
  const Var& any = v.after ? *v.after : *v.before;
  Json j{{"change", kinds[v.kind]}, {"name", std::string(any.name)}, {"block", any.block->idx}};
  j["before"] = v.before ? Json::parse(varToJson(*v.before)) : Json(nullptr);
  j["after"] = v.after ? Json::parse(varToJson(*v.after)) : Json(nullptr);
  if (v.kind == VarEntry::Changed) j["changes"] = changesJson(v.changes);
  return j;
}

}  // namespace

// {
//   "before": path, "after": path, "same": bool, "summary": "-2 split, +2 c_reducescatter",
//   "job": [ {"what", "before", "after"} ],              // world_size, process groups, unknown keys
//   "ranks": [ { "rank", "same", "summary",
//                "counts": { TYPE: {"removed", "added", "changed"} },
//                "collectives": { "before": {"count", "payload_bytes", "ring_bytes", "unknown_size", "by_kind"},
//                                 "after": ... },
//                "program": [ changes ],                  // fetch, blocks, unknown keys
//                "ops":  [ {"change", "type", "before": pointer|null, "after": pointer|null,
//                           "inputs", "outputs", "moved", "changes": [ {"what", "before", "after"} ]} ],
//                "vars": [ {"change", "name", "block", "before": var|null, "after": var|null, "changes"} ] } ]
// }
std::string renderDiffJson(const JobDiff& diff) {
  Json root{{"before", diff.before->path}, {"after", diff.after->path}, {"same", diff.same()}};
  root["summary"] = summarizeCounts(diff.totalCountsByType());
  root["job"] = changesJson(diff.job_changes);
  Json ranks = Json::array();
  for (const RankDiff& r : diff.ranks) {
    Json j{{"rank", r.rank}, {"same", r.same()}, {"summary", summarizeCounts(r.countsByType())}};
    j["counts"] = countsJson(r.countsByType());
    j["collectives"] = Json{{"before", commJson(r.comm_before)}, {"after", commJson(r.comm_after)}};
    j["program"] = changesJson(r.program_changes);
    Json ops = Json::array();
    for (const OpEntry& e : r.ops) ops.push_back(opJson(r, e));
    j["ops"] = std::move(ops);
    Json vars = Json::array();
    for (const VarEntry& v : r.vars) vars.push_back(varJson(v));
    j["vars"] = std::move(vars);
    ranks.push_back(std::move(j));
  }
  root["ranks"] = std::move(ranks);
  return root.dump(2) + "\n";
}

}  // namespace spopt
