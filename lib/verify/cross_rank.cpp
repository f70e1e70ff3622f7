#include "verify/cross_rank.h"

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

MeshAgreement::MeshAgreement(const Job& job) {
  if (job.programs.size() < 2) return;
  head_ = job.programs.front().get();
  first_.reserve(head_->blocks.empty() ? 0 : head_->blocks.front()->vars.size());
  agrees_.resize(head_->blocks.size());
  for (size_t bi = 0; bi < head_->blocks.size(); ++bi) agrees_[bi].assign(head_->blocks[bi]->vars.size(), 0);
}

void MeshAgreement::add(const Program& p, size_t bi, size_t vi, const Var& v, ShardingCache& cache) {
  if (!head_) return;
  const bool is_head = &p == head_;
  if (!is_head && bi < agrees_.size() && vi < agrees_[bi].size() && agrees_[bi][vi]) {
    const Var& h = *head_->blocks[bi]->vars[vi];
    if (h.name == v.name && sameDeclaration(h, v)) return;
  }
  if (!cache.of(v.dist_attr).sharded) return;
  auto agreed = [&] {
    if (is_head && bi < agrees_.size() && vi < agrees_[bi].size()) agrees_[bi][vi] = 1;
  };
  auto it = first_.find(v.name);
  if (it != first_.end() && sameDeclaration(*it->second, v)) return agreed();
  auto s = varSharding(v, &problem_, &cache);
  if (!s) return;  // malformed (the per-var check reports it)
  if (it == first_.end()) {
    first_.emplace(v.name, &v);
    return agreed();
  }
  const Var& fv = *it->second;
  Sharding f = *varSharding(fv, &problem_, &cache);
  if (f.mesh_shape == s->mesh_shape && f.process_ids == s->process_ids && f.mapping == s->mapping &&
      (f.global_shape.empty() || s->global_shape.empty() || f.global_shape == s->global_shape))
    return agreed();
  found_.emplace_back(varPointer(v) + "/dist_attr", "var \"" + std::string(v.name) + "\" is one tensor sharded differently across ranks: rank " +
                                                        std::to_string(fv.block->program->rank) + " has " + shardingText(f) + ", rank " +
                                                        std::to_string(p.rank) + " has " + shardingText(*s));
}

}  // namespace spopt
