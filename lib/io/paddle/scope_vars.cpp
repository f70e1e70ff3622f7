#include "io/paddle/scope_vars.h"

#include <set>

namespace spopt::paddle {

std::vector<std::string> declareScopeVars(Json& program) {
  std::vector<std::string> declared_now;
  if (!program.contains("blocks") || !program["blocks"].is_array() || program["blocks"].empty()) return declared_now;
  Json& blocks = program["blocks"];
  std::vector<std::set<std::string>> names(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const Json& v : blocks[b].value("vars", Json::array()))
      if (v.contains("name") && v["name"].is_string()) names[b].insert(v["name"].get<std::string>());
  auto visible = [&](size_t b, const std::string& name) {
    for (int64_t at = int64_t(b), hops = 0; at >= 0 && at < int64_t(blocks.size()) && hops <= int64_t(blocks.size()); ++hops) {
      if (names[size_t(at)].count(name)) return true;
      at = blocks[size_t(at)].value("parent_idx", int64_t(-1));
    }
    return false;
  };
  Json added = Json::array();  // appended to block 0 at the end: the loops read the blocks
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!blocks[b].contains("ops") || !blocks[b]["ops"].is_array()) continue;
    for (const Json& op : blocks[b]["ops"])
      for (const char* side : {"inputs", "outputs"}) {
        if (!op.contains(side) || !op[side].is_object()) continue;
        for (const auto& [slot, args] : op[side].items())
          for (const Json& arg : args) {
            if (!arg.is_string() || visible(b, arg.get<std::string>())) continue;
            std::string name = arg.get<std::string>();
            names[0].insert(name);
            added.push_back({{"name", name}, {"shape", Json::array()}, {"dtype", "float32"}, {"persistable", true},
                            {"paddle", {{"type", "RAW"}, {"tensor", nullptr}, {"scope_only", true}}}});
            declared_now.push_back(std::move(name));
          }
      }
  }
  for (Json& v : added) blocks[0]["vars"].push_back(std::move(v));
  return declared_now;
}

void noteScopeVars(ImportedProgram& imported) {
  std::vector<std::string> names = declareScopeVars(imported.program);
  if (names.empty()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  imported.notes.push_back(imported.path + ": declared " + std::to_string(names.size()) +
                           " var(s) the program names but does not declare, as non-tensor scope vars (RAW): " + list);
}

bool isScopeOnly(const Json& var) {
  return var.contains("paddle") && var["paddle"].is_object() && var["paddle"].value("scope_only", false);
}

}  // namespace spopt::paddle
