#include "analysis/collectives.h"

namespace spopt {

namespace {
// PIR spells collectives as "pd_op." + a legacy or current name, with a trailing "_" for the
// in-place variant (pd_op.all_reduce_, pd_op.c_allreduce_sum_); operands are slots in0/out0.
std::optional<Collective> asPirCollective(const Op& op, std::string_view t) {
  t.remove_prefix(6);
  if (!t.empty() && t.back() == '_') t.remove_suffix(1);
  Collective c;
  c.pir = true;
  c.in_slot = "in0";
  c.out_slot = "out0";
  c.ring_id = op.attrs.getInt("ring_id").value_or(-1);
  auto reduce = [&](ReduceOp r) {
    c.kind = CollectiveKind::AllReduce;
    c.reduce = r;
  };
  if (t == "all_reduce") reduce(static_cast<ReduceOp>(op.attrs.getInt("reduce_type").value_or(0)));
  else if (t == "c_allreduce_sum") reduce(ReduceOp::Sum);
  else if (t == "c_allreduce_max") reduce(ReduceOp::Max);
  else if (t == "c_allreduce_min") reduce(ReduceOp::Min);
  else if (t == "c_allreduce_prod") reduce(ReduceOp::Prod);
  else if (t == "reduce_scatter" || t == "c_reducescatter") c.kind = CollectiveKind::ReduceScatter;
  else if (t == "all_gather" || t == "c_allgather") c.kind = CollectiveKind::AllGather;
  else if (t == "broadcast" || t == "c_broadcast") c.kind = CollectiveKind::Broadcast;
  else if (t == "c_identity") c.kind = CollectiveKind::Identity;
  else return std::nullopt;
  return c;
}
}  // namespace

std::optional<Collective> asCollective(const Op& op) {
  Collective c;
  std::string_view t = op.type;
  if (t.substr(0, 6) == "pd_op.") return asPirCollective(op, t);
  auto reduce = [&](ReduceOp r) {
    c.kind = CollectiveKind::AllReduce;
    c.reduce = r;
  };
  if (t == "c_allreduce_sum") reduce(ReduceOp::Sum);
  else if (t == "c_allreduce_max") reduce(ReduceOp::Max);
  else if (t == "c_allreduce_min") reduce(ReduceOp::Min);
  else if (t == "c_allreduce_prod") reduce(ReduceOp::Prod);
  else if (t == "c_reducescatter") c.kind = CollectiveKind::ReduceScatter;
  else if (t == "c_allgather") c.kind = CollectiveKind::AllGather;
  else if (t == "c_broadcast") c.kind = CollectiveKind::Broadcast;
  else if (t == "c_identity") c.kind = CollectiveKind::Identity;
  else {
    c.legacy = false;
    if (t == "all_reduce") reduce(static_cast<ReduceOp>(op.attrs.getInt("reduce_type").value_or(0)));
    else if (t == "reduce_scatter") c.kind = CollectiveKind::ReduceScatter;
    else if (t == "all_gather") c.kind = CollectiveKind::AllGather;
    else if (t == "broadcast") c.kind = CollectiveKind::Broadcast;
    else return std::nullopt;
    c.in_slot = "x";
    c.out_slot = "out";
    c.ring_id = op.attrs.getInt("ring_id").value_or(-1);
    return c;
  }
  c.legacy = true;
  c.in_slot = "X";
  c.out_slot = "Out";
  c.ring_id = op.attrs.getInt("ring_id").value_or(-1);
  return c;
}

const char* collectiveKindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return "all-reduce";
    case CollectiveKind::ReduceScatter: return "reduce-scatter";
    case CollectiveKind::AllGather: return "all-gather";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Identity: return "identity";
  }
  return "?";
}

std::map<int64_t, std::vector<const Op*>> collectivesByRing(const Program& p) {
  std::map<int64_t, std::vector<const Op*>> out;
  for (const auto& b : p.blocks)
    for (const Op& op : b->ops)
      if (auto c = asCollective(op); c && communicates(*c)) out[c->ring_id].push_back(&op);
  return out;
}

}  // namespace spopt
