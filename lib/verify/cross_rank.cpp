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

// Same dist_attr text (interned: the same pointer), shape and dtype: varSharding gives the same
// answer for both, so the pair agrees without parsing or copying a Sharding.
bool sameDeclaration(const Var& a, const Var& b) {
  std::string_view ta = a.dist_attr.compactText(), tb = b.dist_attr.compactText();
  return !ta.empty() && ta.data() == tb.data() && ta.size() == tb.size() && a.dtype == b.dtype && a.shape == b.shape;
}

}  // namespace

void checkMeshAgreement(const Job& job, const std::function<void(std::string, std::string)>& report) {
  if (job.programs.size() < 2) return;
  // var name -> the first var declaring it sharded (validly); its Sharding is parsed again only
  // when a later declaration differs from it in text or shape.
  absl::flat_hash_map<std::string_view, const Var*> first;
  first.reserve(job.programs.front()->blocks.empty() ? 0 : job.programs.front()->blocks.front()->vars.size());
  ShardingCache cache;
  std::string problem;
  for (const auto& p : job.programs)
    for (const auto& b : p->blocks)
      for (const auto& v : b->vars) {
        if (v->removed || !v->hasDistAttr() || !cache.of(v->dist_attr).sharded) continue;
        auto it = first.find(v->name);
        if (it != first.end() && sameDeclaration(*it->second, *v)) continue;
        auto s = varSharding(*v, &problem, &cache);
        if (!s) continue;  // malformed (the per-var check reports it)
        if (it == first.end()) {
          first.emplace(v->name, v.get());
          continue;
        }
        const Var& fv = *it->second;
        Sharding f = *varSharding(fv, &problem, &cache);
        if (f.mesh_shape == s->mesh_shape && f.process_ids == s->process_ids && f.mapping == s->mapping &&
            (f.global_shape.empty() || s->global_shape.empty() || f.global_shape == s->global_shape))
          continue;
        report(varPointer(*v) + "/dist_attr", "var \"" + std::string(v->name) + "\" is one tensor sharded differently across ranks: rank " +
                                                  std::to_string(fv.block->program->rank) + " has " + shardingText(f) + ", rank " +
                                                  std::to_string(p->rank) + " has " + shardingText(*s));
      }
}

}  // namespace spopt
