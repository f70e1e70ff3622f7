#pragma once
// What the ranks of a job must agree on, beyond each program's own rules: a var that several
// ranks declare sharded is one tensor, split over one mesh. (The process-group table is the job's
// one `process_groups` list, so every rank sees the same one; import builds it from each rank's
// c_comm_init and refuses ranks that disagree, io/paddle/assemble.cpp. A collective issued by a
// rank outside its ring is the verifier's per-op check.)
#include <absl/container/flat_hash_map.h>

#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "verify/sharding.h"

namespace spopt {

// Finds each sharded var whose process mesh, dims_mapping or global shape differs from the first
// rank (job order) that declares it, fed var by var, in job order, by a walk that already reads
// every var (the verifier's): the vars are touched once. Each add() gets a var that is not
// removed, has a dist_attr, and its place (block index in its program, var index in the block).
// Linear in vars.
class MeshAgreement {
 public:
  explicit MeshAgreement(const Job& job);
  // `index`: the var's index in its block's vars, SIZE_MAX when not known.
  void add(const Program& p, size_t block, size_t index, const Var& v, ShardingCache& cache);
  // (pointer, message) for each disagreement, in job order.
  std::vector<std::pair<std::string, std::string>> take() { return std::move(found_); }

 private:
  const Program* head_ = nullptr;  // null: fewer than two programs, nothing to agree on
  // var name -> the first var declaring it sharded (validly)
  absl::flat_hash_map<std::string_view, const Var*> first_;
  // SPMD programs declare the same vars in the same places: by (block, index), whether the first
  // program's var agrees with the first declaration of its name. A later var declared the same
  // way as that one agrees too, without a lookup by name.
  std::vector<std::vector<char>> agrees_;
  std::vector<std::pair<std::string, std::string>> found_;
  std::string problem_;
};

}  // namespace spopt
