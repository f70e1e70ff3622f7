#pragma once
// A var's sharding as its dist_attr states it (dims_mapping over a process_mesh), checked: the
// verifier reports a malformed one, and replay (runtime/inputs.h), which slices program inputs
// by it, reads the same parse, so replay never meets a sharding error validate let through.
#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

struct Sharding {
  std::vector<int64_t> mapping;       // dims_mapping: per dim, the mesh dim it is split over, or -1
  std::vector<int64_t> mesh_shape;    // process_mesh.shape
  std::vector<int64_t> process_ids;   // process_mesh.process_ids, row-major over mesh_shape
  std::vector<int64_t> global_shape;  // the var's shape times the mesh dims it is split over
};

// The shape-independent part of a dist_attr, parsed once per distinct (interned) dist_attr text:
// most vars of a job share a few, and parsing each var's would cost the verifier a third of a load.
class ShardingCache {
 public:
  struct Parsed {
    bool sharded = false;
    std::string problem;
    Sharding sharding;  // global_shape unset
  };
  const Parsed& of(const JsonObject& dist_attr);

 private:
  absl::flat_hash_map<const char*, Parsed> by_text_;
  absl::flat_hash_map<std::string, Parsed> by_content_;  // edited objects, by dims_mapping and process_mesh
  std::string key_;
};

// nullopt when `v` shards no dim (no dist_attr, or dims_mapping all -1) or when the sharding is
// malformed; then *problem says why (and is empty otherwise). Shapes with an unknown dim get no
// global shape check. `cache` (optional) shares the dist_attr parse across vars.
std::optional<Sharding> varSharding(const Var& v, std::string* problem, ShardingCache* cache = nullptr);

}  // namespace spopt
