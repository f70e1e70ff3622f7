#include "verify/sharding.h"

#include "support/checked_size.h"

namespace spopt {
namespace {

ShardingCache::Parsed parse(const JsonObject& dist_attr) {
  ShardingCache::Parsed out;
  const JsonObject& d = dist_attr;
  Sharding& s = out.sharding;
  s.mapping = d.getIntArray("dims_mapping").value_or(std::vector<int64_t>{});
  for (int64_t m : s.mapping) out.sharded |= m >= 0;
  if (!out.sharded) return out;
  const std::string_view* raw = d.find("process_mesh");
  std::optional<std::vector<int64_t>> shape, ids;
  if (raw && !raw->empty() && raw->front() == '{') {
    JsonObject mesh = JsonObject::fromCompactText(*raw);
    shape = mesh.getIntArray("shape");
    ids = mesh.getIntArray("process_ids");
  }
  if (!shape || !ids) {
    out.problem = "a sharded var needs process_mesh.shape and process_mesh.process_ids (integer arrays)";
    return out;
  }
  s.mesh_shape = std::move(*shape);
  s.process_ids = std::move(*ids);
  auto mesh_size = checkedNumel(s.mesh_shape);
  if (!mesh_size || *mesh_size == 0 || *mesh_size != int64_t(s.process_ids.size())) {
    out.problem = "process_mesh.shape does not hold process_ids.size() processes";
    return out;
  }
  for (int64_t m : s.mapping)
    if (m >= int64_t(s.mesh_shape.size())) {
      out.problem = "dims_mapping names mesh dim " + std::to_string(m) + " of a " + std::to_string(s.mesh_shape.size()) + "-d mesh";
      return out;
    }
  return out;
}

}  // namespace

const ShardingCache::Parsed& ShardingCache::of(const JsonObject& dist_attr) {
  std::string_view text = dist_attr.compactText();
  if (text.empty()) {
    // Edited by a pass, so not interned: keyed by what parse() reads, the two members' texts
    // (a pass gives the vars it adds a few distinct dist_attrs, each parsed once).
    auto dims = dist_attr.raw("dims_mapping"), mesh = dist_attr.raw("process_mesh");
    key_.assign(dims.value_or("-"));
    key_ += '\0';
    key_ += mesh.value_or("-");
    auto it = by_content_.find(key_);
    if (it == by_content_.end()) it = by_content_.emplace(key_, parse(dist_attr)).first;
    return it->second;
  }
  auto it = by_text_.find(text.data());
  if (it == by_text_.end()) it = by_text_.emplace(text.data(), parse(dist_attr)).first;
  return it->second;
}

std::optional<Sharding> varSharding(const Var& v, std::string* problem, ShardingCache* cache) {
  problem->clear();
  if (!v.hasDistAttr()) return std::nullopt;
  ShardingCache local;
  const ShardingCache::Parsed& p = (cache ? *cache : local).of(v.dist_attr);
  if (!p.sharded) return std::nullopt;
  if (!p.problem.empty()) {
    *problem = p.problem;
    return std::nullopt;
  }
  Sharding s = p.sharding;
  if (s.mapping.size() != v.shape.size()) {
    *problem = "dims_mapping has " + std::to_string(s.mapping.size()) + " entries for a tensor of rank " + std::to_string(v.shape.size());
    return std::nullopt;
  }
  s.global_shape = v.shape;
  bool unknown = false;
  for (size_t i = 0; i < s.mapping.size(); ++i) {
    int64_t m = s.mapping[i];
    unknown |= v.shape[i] < 0;
    if (m < 0 || v.shape[i] < 0) continue;
    auto global = checkedMul(v.shape[i], s.mesh_shape[size_t(m)]);
    if (!global) {
      *problem = "dim " + std::to_string(i) + " of the global shape overflows int64";
      return std::nullopt;
    }
    s.global_shape[i] = *global;
  }
  if (!unknown && !checkedBytes(s.global_shape, dtypeSize(v.dtype))) {
    *problem = "the global shape's byte size overflows int64";
    return std::nullopt;
  }
  return s;
}

}  // namespace spopt
