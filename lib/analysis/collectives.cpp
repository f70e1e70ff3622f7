#include "analysis/collectives.h"

#include "ops/op_def.h"

namespace spopt {

std::optional<Collective> asCollective(const Op& op) {
  ResolvedOp r = resolveOp(op.type);
  if (!r || !r.def->collective) return std::nullopt;
  Collective c;
  c.kind = *r.def->collective;
  c.dialect = r.spelling->dialect;
  c.ring_id = op.attrs.getInt("ring_id").value_or(-1);
  // Legacy names spell the reduction (c_allreduce_max); the others carry reduce_type.
  if (c.kind == CollectiveKind::AllReduce)
    c.reduce = r.spelling->reduce ? *r.spelling->reduce : static_cast<ReduceOp>(op.attrs.getInt("reduce_type").value_or(0));
  if (std::string_view root = collectiveRootAttr(c.kind); !root.empty()) c.root = op.attrs.getInt(root).value_or(0);
  // The slot names are the definition's (ops/collective_ops.cpp), in the op's dialect.
  c.in_slot = slotName(r.def->inputs.front(), c.dialect, true);
  c.out_slot = slotName(r.def->outputs.front(), c.dialect, false);
  return c;
}

const char* collectiveKindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return "all-reduce";
    case CollectiveKind::ReduceScatter: return "reduce-scatter";
    case CollectiveKind::AllGather: return "all-gather";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Identity: return "identity";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::KernelAllReduce: return "kernel all-reduce";
  }
  return "?";
}

std::map<int64_t, std::vector<const Op*>> collectivesByRing(const Program& p) {
  std::map<int64_t, std::vector<const Op*>> out;
  for (const auto& b : p.blocks)
    for (const Op& op : b->inOrder())
      if (auto c = asCollective(op); c && communicates(*c)) out[c->ring_id].push_back(&op);
  return out;
}

}  // namespace spopt
