#include "verify/sharding.h"

#include "support/checked_size.h"

namespace spopt {

std::optional<Sharding> varSharding(const Var& v, std::string* problem) {
  problem->clear();
  Sharding s;
  s.mapping = v.dimsMapping();
  bool sharded = false;
  for (int64_t m : s.mapping) sharded |= m >= 0;
  if (!sharded) return std::nullopt;
  auto fail = [&](std::string why) -> std::optional<Sharding> {
    *problem = std::move(why);
    return std::nullopt;
  };
  if (s.mapping.size() != v.shape.size())
    return fail("dims_mapping has " + std::to_string(s.mapping.size()) + " entries for a tensor of rank " + std::to_string(v.shape.size()));
  const std::string_view* raw = v.dist_attr.find("process_mesh");
  std::optional<std::vector<int64_t>> shape, ids;
  if (raw && !raw->empty() && raw->front() == '{') {
    JsonObject mesh = JsonObject::fromCompactText(*raw);
    shape = mesh.getIntArray("shape");
    ids = mesh.getIntArray("process_ids");
  }
  if (!shape || !ids) return fail("a sharded var needs process_mesh.shape and process_mesh.process_ids (integer arrays)");
  s.mesh_shape = std::move(*shape);
  s.process_ids = std::move(*ids);
  auto mesh_size = checkedNumel(s.mesh_shape);
  if (!mesh_size || *mesh_size == 0 || *mesh_size != int64_t(s.process_ids.size()))
    return fail("process_mesh.shape does not hold process_ids.size() processes");
  s.global_shape = v.shape;
  bool unknown = false;
  for (size_t i = 0; i < s.mapping.size(); ++i) {
    int64_t m = s.mapping[i];
    unknown |= v.shape[i] < 0;
    if (m < 0) continue;
    if (m >= int64_t(s.mesh_shape.size()))
      return fail("dims_mapping names mesh dim " + std::to_string(m) + " of a " + std::to_string(s.mesh_shape.size()) + "-d mesh");
    if (v.shape[i] < 0) continue;
    auto global = checkedMul(v.shape[i], s.mesh_shape[size_t(m)]);
    if (!global) return fail("dim " + std::to_string(i) + " of the global shape overflows int64");
    s.global_shape[i] = *global;
  }
  if (!unknown && !checkedBytes(s.global_shape, dtypeSize(v.dtype))) return fail("the global shape's byte size overflows int64");
  return s;
}

}  // namespace spopt
