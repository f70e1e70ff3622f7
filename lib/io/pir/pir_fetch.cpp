#include "io/pir/pir_fetch.h"

#include <unordered_map>
#include <unordered_set>

#include "ops/op_def.h"
#include "support/error.h"

namespace spopt::pir {
namespace {

bool isFetch(const ojson& op) {
  const OpDef* def = resolveOp(op.value("type", "")).def;
  return def && def->has(trait::Sink);
}

// The one var a slot map holds ("in0": ["x"]), or "" when it holds anything else.
std::string onlyVar(const ojson& slots) {
  if (!slots.is_object() || slots.size() != 1) return "";
  const ojson& args = slots.begin().value();
  return args.is_array() && args.size() == 1 && args[0].is_string() ? args[0].get<std::string>() : "";
}

}  // namespace

ojson withFetchOps(const ojson& program) {
  if (!program.contains("fetch") || !program.contains("blocks") || program["blocks"].size() != 1) return program;
  ojson out = program;
  ojson& block = out["blocks"][0];
  std::unordered_set<std::string> fetched_by_op;
  const ojson& in_block = program["blocks"][0];
  if (in_block.contains("ops"))
    for (const ojson& op : in_block["ops"])
      if (isFetch(op)) fetched_by_op.insert(onlyVar(op.value("outputs", ojson::object())));
  std::unordered_map<std::string, const ojson*> vars;  // into `program`, which stays as it is
  if (in_block.contains("vars"))
    for (const ojson& v : in_block["vars"]) vars[v.value("name", "")] = &v;

  ojson new_vars = ojson::array(), new_ops = ojson::array();
  int64_t col = 0;
  for (const ojson& f : program["fetch"]) {
    if (!f.is_string() || fetched_by_op.count(f.get<std::string>())) continue;
    const std::string name = f.get<std::string>();
    ojson result = {{"name", name + "@fetch"}, {"shape", ojson::array()}, {"dtype", "float32"}};
    if (auto it = vars.find(name); it != vars.end()) {
      result["shape"] = it->second->value("shape", ojson::array());
      result["dtype"] = it->second->value("dtype", "float32");
    }
    new_vars.push_back(result);
    ojson op = {{"type", "pd_op.fetch"},
                {"inputs", {{"in0", {name}}}},
                {"outputs", {{"out0", {name + "@fetch"}}}},
                {"attrs", {{"col", col++}, {"name", name}, {kFetchListAttr, true}}}};
    op["pir"] = {{"attr_types", {{"col", "int32"}, {"name", "str"}, {kFetchListAttr, "bool"}}}};
    new_ops.push_back(std::move(op));
  }
  for (auto& v : new_vars) block["vars"].push_back(std::move(v));
  for (auto& o : new_ops) block["ops"].push_back(std::move(o));
  return out;
}

void restoreFetchList(ojson& program, const std::string& file, const std::string& ops_pointer) {
  if (!program.contains("blocks")) return;
  std::unordered_map<std::string, std::string> fetched;  // result var -> the var it fetches
  for (ojson& block : program["blocks"]) {
    if (!block.contains("ops")) continue;
    ojson kept = ojson::array();
    std::unordered_set<std::string> dropped_vars;
    const ojson& ops = block["ops"];
    for (size_t i = 0; i < ops.size(); ++i) {
      const ojson& op = ops[i];
      const ojson attrs = op.value("attrs", ojson::object());
      if (!attrs.contains(kFetchListAttr)) {
        kept.push_back(op);
        continue;
      }
      std::string at = ops_pointer + "/" + std::to_string(i);
      if (!attrs.at(kFetchListAttr).is_boolean() || !attrs.at(kFetchListAttr).get<bool>())
        throw InputError(file, at + "/attrs/" + kFetchListAttr, std::string(kFetchListAttr) + " must be true when present");
      std::string operand = onlyVar(op.value("inputs", ojson::object()));
      std::string result = onlyVar(op.value("outputs", ojson::object()));
      if (!isFetch(op) || operand.empty() || result.empty())
        throw InputError(file, at, std::string(kFetchListAttr) + " marks a \"" + op.value("type", "") +
                                       "\" op; it belongs on a pd_op.fetch of one value");
      fetched[result] = operand;
      dropped_vars.insert(result);
    }
    block["ops"] = std::move(kept);
    if (dropped_vars.empty() || !block.contains("vars")) continue;
    ojson vars = ojson::array();
    for (auto& v : block["vars"])
      if (!dropped_vars.count(v.value("name", ""))) vars.push_back(std::move(v));
    block["vars"] = std::move(vars);
  }
  if (!program.contains("fetch")) return;
  for (auto& f : program["fetch"])
    if (f.is_string())
      if (auto it = fetched.find(f.get<std::string>()); it != fetched.end()) f = it->second;
}

}  // namespace spopt::pir
