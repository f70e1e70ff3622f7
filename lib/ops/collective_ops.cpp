// Collectives, in their three spellings: legacy c_* (the reduction in the name for all-reduce;
// slots X/Out), current (slots x/out, all_reduce's reduce_type) and PIR pd_op.* (in0/out0, the
// in-place variant with a trailing "_"; an all-reduce is written in place, as Paddle 3's
// auto-parallel writes it). The communicator runs them (runtime/communicator.h).
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

// Paddle's InferShape for send_v2 / recv_v2 / p_recv: peer and ring_id are non-negative; a receive
// declares what arrives — its dtype attribute and (legacy) out_shape agree with Out. Whether the
// peer is a member of the ring, and what the partner sends, the verifier checks (it sees the job).
Result checkPeer(const OpView& op) {
  for (std::string_view key : {"peer", "ring_id"})
    if (auto v = intAttr(op, key, 0); v && *v < 0)
      return fail(op, "/attrs/" + std::string(key), std::string(key) + " " + std::to_string(*v) + " is negative");
  return std::nullopt;
}
Result ruleSend(const OpView& op) { return checkPeer(op); }
Result ruleRecv(const OpView& op) {
  if (auto e = checkPeer(op)) return e;
  const Var* out = op.out("Out");
  if (!out) return std::nullopt;
  if (const std::string_view* raw = op.attrs.find("dtype"))
    if (std::optional<DType> t = dtypeFromAttr(*raw); t && *t != out->dtype)
      return fail(op, "/attrs/dtype", "dtype " + std::string(dtypeName(*t)) + " disagrees with Out's " + std::string(dtypeName(out->dtype)));
  auto shape = intsAttr(op, "out_shape", {});
  if (shape && !shape->empty() && known(out) && *shape != out->shape)
    return fail(op, "/attrs/out_shape", "out_shape " + dimsText(*shape) + " disagrees with Out's " + dimsText(out->shape));
  return std::nullopt;
}

// Point-to-point, as Paddle defines it: legacy send_v2(X) / recv_v2() -> Out (send_v2_op.cc,
// recv_v2_op.cc) and PIR pd_op.p_send(x) / pd_op.p_recv() -> out (ops.yaml; pd_op.send_v2 /
// pd_op.recv_v2 are the legacy ops translated). `peer` is the partner's position in ring
// `ring_id` (its rank in the ring's communicator). A receive names what arrives: `dtype` (a Paddle
// code in legacy programs, a DataType in PIR) and, in legacy programs, `out_shape`.
void addPointToPointOps(std::vector<OpDef>& d) {
  std::vector<AttrDef> common = {{"ring_id", AttrKind::Int}, {"peer", AttrKind::Int}, {"use_calc_stream", AttrKind::Bool},
                                 {"dynamic_shape", AttrKind::Bool}};
  d.push_back({.name = "p_send",
               .spellings = {legacyName("send_v2"), pirName("pd_op.p_send"), pirName("pd_op.send_v2")},
               .inputs = {{"X", {}, 0, true}},
               .attrs = common,
               .traits = trait::SideEffects,
               .rule = ruleSend,
               .p2p = P2PKind::Send});
  std::vector<AttrDef> recv_attrs = common;
  recv_attrs.push_back({"dtype", AttrKind::DType});
  recv_attrs.push_back({"out_shape", AttrKind::Ints});
  d.push_back({.name = "p_recv",
               .spellings = {legacyName("recv_v2"), pirName("pd_op.p_recv"), pirName("pd_op.recv_v2")},
               .outputs = {{"Out", {}, 0, true}},
               .attrs = std::move(recv_attrs),
               .traits = trait::SideEffects,
               .rule = ruleRecv,
               .p2p = P2PKind::Recv});
}

}  // namespace

void addCollectiveOps(std::vector<OpDef>& d) {
  std::vector<OperandDef> in = {{"X", "x", 0, true}}, out = {{"Out", "out", 0, true}};
  std::vector<AttrDef> attrs = {{"ring_id", AttrKind::Int}, {"nranks", AttrKind::Int}};
  auto collective = [&](std::string_view name, CollectiveKind kind, std::vector<Spelling> spellings, std::vector<AttrDef> extra = {}) {
    std::vector<AttrDef> a = attrs;
    a.insert(a.end(), extra.begin(), extra.end());
    d.push_back({.name = name, .spellings = std::move(spellings), .inputs = in, .outputs = out, .attrs = std::move(a),
                 .traits = trait::SideEffects, .collective = kind});
  };
  auto pir = [](std::string_view base, std::string_view inplace) { return std::vector<Spelling>{pirName(base), pirName(inplace, true)}; };
  auto with = [](std::vector<Spelling> a, const std::vector<Spelling>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  auto legacyReduce = [](std::string_view t, ReduceOp r, Dialect dialect = Dialect::Legacy, bool inplace = false) {
    return Spelling{t, dialect, inplace, r};
  };
  collective("all_reduce", CollectiveKind::AllReduce,
             with({legacyReduce("c_allreduce_sum", ReduceOp::Sum), legacyReduce("c_allreduce_max", ReduceOp::Max),
                   legacyReduce("c_allreduce_min", ReduceOp::Min), legacyReduce("c_allreduce_prod", ReduceOp::Prod),
                   currentName("all_reduce"), pirName("pd_op.all_reduce_", true), pirName("pd_op.all_reduce"),
                   legacyReduce("pd_op.c_allreduce_sum", ReduceOp::Sum, Dialect::Pir),
                   legacyReduce("pd_op.c_allreduce_sum_", ReduceOp::Sum, Dialect::Pir, true),
                   legacyReduce("pd_op.c_allreduce_max", ReduceOp::Max, Dialect::Pir),
                   legacyReduce("pd_op.c_allreduce_max_", ReduceOp::Max, Dialect::Pir, true),
                   legacyReduce("pd_op.c_allreduce_min", ReduceOp::Min, Dialect::Pir),
                   legacyReduce("pd_op.c_allreduce_min_", ReduceOp::Min, Dialect::Pir, true),
                   legacyReduce("pd_op.c_allreduce_prod", ReduceOp::Prod, Dialect::Pir),
                   legacyReduce("pd_op.c_allreduce_prod_", ReduceOp::Prod, Dialect::Pir, true)},
                  {}),
             {{"reduce_type", AttrKind::Int}});
  collective("reduce_scatter", CollectiveKind::ReduceScatter,
             with({legacyName("c_reducescatter"), currentName("reduce_scatter")},
                  with(pir("pd_op.reduce_scatter", "pd_op.reduce_scatter_"), pir("pd_op.c_reducescatter", "pd_op.c_reducescatter_"))));
  collective("all_gather", CollectiveKind::AllGather,
             with({legacyName("c_allgather"), currentName("all_gather")},
                  with(pir("pd_op.all_gather", "pd_op.all_gather_"), pir("pd_op.c_allgather", "pd_op.c_allgather_"))));
  collective("broadcast", CollectiveKind::Broadcast,
             with({legacyName("c_broadcast"), currentName("broadcast")},
                  with(pir("pd_op.broadcast", "pd_op.broadcast_"), pir("pd_op.c_broadcast", "pd_op.c_broadcast_"))),
             {{"root", AttrKind::Int}});
  // Paddle's reduce to one member: `root_id` is the root's position in the ring; the other
  // members keep their input (NCCL writes the receive buffer on the root only).
  collective("reduce", CollectiveKind::Reduce,
             {legacyReduce("c_reduce_sum", ReduceOp::Sum), legacyReduce("pd_op.c_reduce_sum", ReduceOp::Sum, Dialect::Pir),
              legacyReduce("pd_op.c_reduce_sum_", ReduceOp::Sum, Dialect::Pir, true)},
             {{"root_id", AttrKind::Int}, {"use_calc_stream", AttrKind::Bool}});
  // Communicator set-up (startup programs): the importer builds the process-group table from them.
  auto setup = [&](std::string_view name, std::string_view legacy, std::string_view pir_type) {
    d.push_back({.name = name, .spellings = {legacyName(legacy), pirName(pir_type)}, .attrs = {{"ring_id", AttrKind::Int}},
                 .traits = trait::SideEffects});
  };
  setup("comm_init", "c_comm_init", "pd_op.c_comm_init");
  setup("comm_init_all", "c_comm_init_all", "pd_op.c_comm_init_all");
  setup("gen_nccl_id", "c_gen_nccl_id", "pd_op.c_gen_nccl_id");
  // The identity moves no data (Megatron's f in forward): not paired across ranks.
  collective("c_identity", CollectiveKind::Identity, with({legacyName("c_identity")}, pir("pd_op.c_identity", "pd_op.c_identity_")));
  addPointToPointOps(d);
}

}  // namespace spopt::ops
