#include "verify/cross_rank.h"

#include <absl/container/flat_hash_map.h>

#include "ir/json_pointer.h"
#include "verify/sharding.h"

namespace spopt {
namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// "mesh [2] of processes [0,1], dims_mapping [0,-1], global shape [8,4]"
std::string shardingText(const Sharding& s) {
  return "mesh " + ints(s.mesh_shape) + " of processes " + ints(s.process_ids) + ", dims_mapping " + ints(s.mapping) +
         ", global shape " + ints(s.global_shape);
}

}  // namespace

void checkMeshAgreement(const Job& job, const std::function<void(std::string, std::string)>& report) {
  if (job.programs.size() < 2) return;
  struct First {
    int64_t rank;
    Sharding sharding;
  };
  absl::flat_hash_map<std::string_view, First> first;  // var name -> the first rank declaring it sharded
  ShardingCache cache;
  std::string problem;
  for (const auto& p : job.programs)
    for (const auto& b : p->blocks)
      for (const auto& v : b->vars) {
        if (v->removed || !v->hasDistAttr()) continue;
        auto s = varSharding(*v, &problem, &cache);
        if (!s) continue;  // replicated, or malformed (the per-var check reports it)
        auto [it, fresh] = first.try_emplace(v->name, First{p->rank, *s});
        if (fresh) continue;
        const Sharding& f = it->second.sharding;
        if (f.mesh_shape == s->mesh_shape && f.process_ids == s->process_ids && f.mapping == s->mapping &&
            (f.global_shape.empty() || s->global_shape.empty() || f.global_shape == s->global_shape))
          continue;
        report(varPointer(*v) + "/dist_attr", "var \"" + std::string(v->name) + "\" is one tensor sharded differently across ranks: rank " +
                                                  std::to_string(it->second.rank) + " has " + shardingText(f) + ", rank " +
                                                  std::to_string(p->rank) + " has " + shardingText(*s));
      }
}

}  // namespace spopt
