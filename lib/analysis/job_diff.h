#pragma once
// What a rewrite changed: two jobs compared rank by rank, ops paired by data flow (op_match.h),
// vars by name. The result is plain data that the text, json, dot and html views render.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/comm_stats.h"
#include "analysis/op_match.h"
#include "ir/ir.h"

namespace spopt {

// One changed value. `what` is a path such as "attrs.ring_id", "inputs.X", "dist_attr.chunk_id",
// "shape" or an unknown key; values are compact JSON text, nullopt where the key is absent.
struct ValueChange {
  std::string what;
  std::optional<std::string> before, after;
};

// An op's place in a unified listing of a rank's changes (program order, removed ops where they
// stood). Indices are OpOrder indices of the side(s) the op exists on.
struct OpEntry {
  enum Kind { Removed, Added, Changed } kind;
  uint32_t before = OpMatching::kNone, after = OpMatching::kNone;
  std::vector<ValueChange> changes;  // Changed only
  bool moved = false;                // Changed only: its order relative to the other kept ops changed
};

struct VarEntry {
  enum Kind { Removed, Added, Changed } kind;
  const Var* before = nullptr;
  const Var* after = nullptr;
  std::vector<ValueChange> changes;
};

struct RankDiff {
  int64_t rank = 0;
  const Program* before = nullptr;  // null when the rank is only in AFTER
  const Program* after = nullptr;   // null when the rank is only in BEFORE
  std::unique_ptr<OpOrder> before_order, after_order;  // empty orders for a missing side
  OpMatching matching;
  std::vector<OpEntry> ops;        // in unified order
  std::vector<VarEntry> vars;      // removed in BEFORE order, then added and changed in AFTER order
  std::vector<ValueChange> program_changes;  // fetch, blocks, unknown keys
  CommStats comm_before, comm_after;
  size_t unchanged_ops = 0;

  bool same() const { return ops.empty() && vars.empty() && program_changes.empty(); }
  // Per op type: how many were removed, added and changed.
  struct TypeCounts {
    int64_t removed = 0, added = 0, changed = 0;
  };
  std::map<std::string, TypeCounts> countsByType() const;
  const Op* beforeOp(const OpEntry& e) const;
  const Op* afterOp(const OpEntry& e) const;
};

// "-2 c_allreduce_sum, -2 split, +2 c_reducescatter, ~1 gelu" (types in name order; "" if none).
std::string summarizeCounts(const std::map<std::string, RankDiff::TypeCounts>& counts);

struct JobDiff {
  const Job* before = nullptr;
  const Job* after = nullptr;
  std::vector<ValueChange> job_changes;  // world_size, process groups, unknown top-level keys
  std::vector<RankDiff> ranks;           // in rank order
  bool bus_factors = false;              // op listings label collectives with ring traffic

  bool same() const;
  std::map<std::string, RankDiff::TypeCounts> totalCountsByType() const;
};

struct DiffOptions {
  std::optional<int64_t> rank;  // compare only this rank (job-level changes are still reported)
  bool bus_factors = false;     // see JobDiff::bus_factors
};

// Throws InputError when `opts.rank` names a rank that neither job has.
JobDiff diffJobs(const Job& before, const Job& after, const DiffOptions& opts = {});

// Raw JSON text without insignificant whitespace, for comparing values written differently.
std::string compactJson(std::string_view raw);

}  // namespace spopt
