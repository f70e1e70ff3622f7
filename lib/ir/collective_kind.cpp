#include "ir/collective_kind.h"

namespace spopt {

std::string_view collectiveOpType(CollectiveKind k, bool legacy) {
  switch (k) {
    case CollectiveKind::AllReduce: return legacy ? "c_allreduce_sum" : "all_reduce";
    case CollectiveKind::ReduceScatter: return legacy ? "c_reducescatter" : "reduce_scatter";
    case CollectiveKind::AllGather: return legacy ? "c_allgather" : "all_gather";
    case CollectiveKind::Broadcast: return legacy ? "c_broadcast" : "broadcast";
    case CollectiveKind::Identity: return "c_identity";
    case CollectiveKind::Reduce: return legacy ? "c_reduce_sum" : "reduce";
    case CollectiveKind::KernelAllReduce: return "";  // a compute op: its own definition spells it
  }
  return "";
}

std::string_view collectiveRootAttr(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::Broadcast: return "root";
    case CollectiveKind::Reduce: return "root_id";
    default: return "";
  }
}

std::string_view legacyAllReduceType(ReduceOp r) {
  switch (r) {
    case ReduceOp::Sum: return "c_allreduce_sum";
    case ReduceOp::Max: return "c_allreduce_max";
    case ReduceOp::Min: return "c_allreduce_min";
    case ReduceOp::Prod: return "c_allreduce_prod";
    case ReduceOp::Avg: return "";
  }
  return "";
}

}  // namespace spopt
