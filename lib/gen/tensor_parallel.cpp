#include "gen/tensor_parallel.h"

#include "gen/nn.h"

namespace spopt::gen {

TensorParallel::TensorParallel(ProgramBuilder& b, const GenOptions& o, int64_t rank)
    : b_(b), opts_(o), legacy_(o.dialect == Dialect::Legacy) {
  const Topology& topo = b.topology();
  t_ = topo.tpIndex(rank);
  tp_ring_ = topo.tpRing(topo.dpIndex(rank));
  dp_ring_ = topo.dpRing(t_);
}

void TensorParallel::allReduce(const Tensor& x, const Tensor& out, int64_t ring, int64_t nranks, bool model_parallel, bool max) {
  if (legacy_) {
    b_.op(max ? "c_allreduce_max" : "c_allreduce_sum")
        .in("X", x)
        .out("Out", out)
        .integer("ring_id", ring)
        .integer("nranks", nranks)
        .flag("use_calc_stream", true)
        .flag("use_model_parallel", model_parallel);
  } else {
    b_.op("all_reduce").in("x", x).out("out", out).integer("ring_id", ring).integer("reduce_type", max ? 1 : 0).integer("nranks", nranks);
  }
}

void TensorParallel::allGather(const Tensor& x, const Tensor& out) {
  auto& op = legacy_ ? b_.op("c_allgather").in("X", x).out("Out", out) : b_.op("all_gather").in("x", x).out("out", out);
  op.integer("ring_id", tp_ring_).integer("nranks", opts_.tp);
  if (legacy_) op.flag("use_calc_stream", true);
  op.scope(kReshardScope);
}

void TensorParallel::identity(const Tensor& x, const Tensor& out) {
  b_.op("c_identity")
      .in("X", x)
      .out("Out", out)
      .integer("ring_id", tp_ring_)
      .flag("use_calc_stream", true)
      .flag("use_model_parallel", true);
}

// [S, ..] with dim 0 gathered: replicated along dim 0.
static Tensor gatheredLike(ProgramBuilder& b, const Tensor& x, int64_t tp) {
  std::vector<int64_t> shape = x.shape;
  std::vector<Axis> axes = x.axes;
  shape[0] *= tp;
  axes[0] = Axis::Rep;
  return b.declare(b.names().tmp(), shape, axes, x.dtype);
}

Tensor TensorParallel::reduceThenSplit(const Tensor& partial) {
  Tensor reduced = b_.like(partial);
  allReduce(partial, reduced, tp_ring_, opts_.tp, true);
  std::string name = b_.names().unique("split");
  std::vector<int64_t> shape = partial.shape;
  std::vector<Axis> axes = partial.axes;
  shape[0] /= opts_.tp;
  axes[0] = Axis::Mp;
  std::vector<Tensor> chunks;
  for (int64_t i = 0; i < opts_.tp; ++i)
    chunks.push_back(b_.declare(name + ".tmp_" + std::to_string(i), shape, axes, partial.dtype));
  b_.op("split")
      .in("X", reduced)
      .out("Out", chunks)
      .integer("axis", 0)
      .integer("num", opts_.tp)
      .ints("sections", {})
      .scope(kReshardScope);
  return chunks[size_t(t_)];
}

Tensor TensorParallel::columnInput(const Tensor& x) {
  if (opts_.tp == 1) return x;
  if (opts_.sp()) {
    Tensor full = gatheredLike(b_, x, opts_.tp);
    allGather(x, full);
    return full;
  }
  if (!legacy_) return x;  // the current dialect has no identity op: the matmul reads x itself
  Tensor same = b_.like(x);
  identity(x, same);
  return same;
}

Tensor TensorParallel::rowOutput(const Tensor& partial) {
  if (opts_.tp == 1) return partial;
  if (opts_.sp()) return reduceThenSplit(partial);
  Tensor reduced = b_.like(partial);
  allReduce(partial, reduced, tp_ring_, opts_.tp, true);
  return reduced;
}

Tensor TensorParallel::rowOutputGrad(const Tensor& partial, const Tensor& dy) {
  if (opts_.tp == 1) return dy;
  if (opts_.sp()) {
    Tensor dpartial = b_.grad(partial);
    allGather(dy, dpartial);
    return dpartial;
  }
  if (!legacy_) return dy;
  Tensor dpartial = b_.grad(partial);
  identity(dy, dpartial);
  return dpartial;
}

Tensor TensorParallel::columnInputGradTarget(const Tensor& x, const Tensor& column_input) {
  if (opts_.tp == 1) return b_.grad(x);
  if (opts_.sp() || legacy_) return b_.grad(column_input);
  return b_.like(column_input);  // x itself was the column input: its partial gradient needs a name
}

Tensor TensorParallel::columnInputGrad(const Tensor& x, const Tensor& target) {
  if (opts_.tp == 1) return target;
  if (opts_.sp()) return reduceThenSplit(target);
  Tensor dx = b_.grad(x);
  allReduce(target, dx, tp_ring_, opts_.tp, true);
  return dx;
}

void TensorParallel::syncSequenceShardedGrad(const Tensor& g) {
  if (opts_.sp()) allReduce(g, g, tp_ring_, opts_.tp, true);
}

void TensorParallel::syncFoundInfinite(const Tensor& flag) {
  if (opts_.tp == 1) return;
  Tensor as_int = b_.declare(flag.name + ".cast_int32", flag.shape, flag.axes, DType::Int32);
  castInto(b_, flag, as_int);
  allReduce(as_int, as_int, tp_ring_, opts_.tp, true, /*max=*/true);
  castInto(b_, as_int, flag);
}

void TensorParallel::syncDataParallelGrad(const Tensor& g) {
  if (opts_.dp > 1) allReduce(g, g, dp_ring_, opts_.dp, false);
}

}  // namespace spopt::gen
