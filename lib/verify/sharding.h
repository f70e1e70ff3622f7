#pragma once
// A var's sharding as its dist_attr states it (dims_mapping over a process_mesh), checked: the
// verifier reports a malformed one, and replay (runtime/inputs.h), which slices program inputs
// by it, reads the same parse, so replay never meets a sharding error validate let through.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

struct Sharding {
  std::vector<int64_t> mapping;     // dims_mapping: per dim, the mesh dim it is split over, or -1
  std::vector<int64_t> mesh_shape;  // process_mesh.shape
  std::vector<int64_t> process_ids; // process_mesh.process_ids, row-major over mesh_shape
  std::vector<int64_t> global_shape;  // the var's shape times the mesh dims it is split over
};

// nullopt when `v` shards no dim (no dist_attr, or dims_mapping all -1) or when the sharding is
// malformed; then *problem says why (and is empty otherwise). Shapes with an unknown dim get no
// global shape check.
std::optional<Sharding> varSharding(const Var& v, std::string* problem);

}  // namespace spopt
