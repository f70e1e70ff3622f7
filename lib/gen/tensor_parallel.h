#pragma once
// The communication at the borders of tensor-parallel regions (Megatron-LM), as a partitioner
// emits it, in both collective dialects. Activations between regions are [seq, batch, hidden]:
// sharded along seq (dim 0) over the tensor-parallel ring with sequence parallelism, replicated
// without; batch (dim 1) is always sharded over the data-parallel ring.
//
//                      forward                          backward
//  column input   SP:  all-gather (reshard)             all_reduce(SUM) + reshard split (reduce-scatter)
//                 TP:  c_identity (legacy) / nothing    all_reduce(SUM)
//  row output     SP:  all_reduce(SUM) + reshard split  all-gather (reshard)
//                 TP:  all_reduce(SUM)                  c_identity (legacy) / nothing
//
// The reshard split is on axis 0 into T chunks; the rank keeps chunk t, its position in the ring,
// and leaves the others unused: the pre-fusion form that fuse-allreduce-split turns into a
// reduce-scatter. With T = 1 there is no communication at all.
#include "gen/options.h"
#include "gen/program_builder.h"

namespace spopt::gen {

inline constexpr const char* kReshardScope = "/auto_parallel/reshard";

class TensorParallel {
 public:
  TensorParallel(ProgramBuilder& b, const GenOptions& o, int64_t rank);

  int64_t tpIndex() const { return t_; }
  int64_t tpRing() const { return tp_ring_; }
  Axis seqAxis() const { return opts_.sp() ? Axis::Mp : Axis::Rep; }
  int64_t localSeq() const { return opts_.sp() ? opts_.seq / opts_.tp : opts_.seq; }

  // Forward: the tensor a column-parallel matmul reads, made from the activation x.
  Tensor columnInput(const Tensor& x);
  // Forward: a row-parallel matmul's partial sum brought back to the activation layout.
  Tensor rowOutput(const Tensor& partial);

  // Backward of rowOutput: from dy (grad of rowOutput's result) to the Out@GRAD of the row matmul.
  Tensor rowOutputGrad(const Tensor& partial, const Tensor& dy);
  // Backward of columnInput in two steps: the var the column matmul_v2_grad writes as X@GRAD,
  // then the collective that turns it into x's gradient (returned).
  Tensor columnInputGradTarget(const Tensor& x, const Tensor& column_input);
  Tensor columnInputGrad(const Tensor& x, const Tensor& target);

  // A parameter gradient that is partial over the sequence shards (layer_norm's) is summed over
  // the tensor-parallel ring, in place. Nothing to do without sequence parallelism.
  void syncSequenceShardedGrad(const Tensor& g);
  // Every parameter gradient is summed (not averaged) over the data-parallel ring, in place: the
  // loss is the sum over the global batch, so the update equals the single-rank one.
  void syncDataParallelGrad(const Tensor& g);
  // Mixed precision's found-inf flag (bool): the max over the tensor-parallel ring, in place, so
  // that every shard of the model skips or takes the step together (as Paddle's hybrid-parallel
  // optimizer does: cast to int32, all-reduce MAX, cast back).
  void syncFoundInfinite(const Tensor& flag);

 private:
  void allReduce(const Tensor& x, const Tensor& out, int64_t ring, int64_t nranks, bool model_parallel, bool max = false);
  void allGather(const Tensor& x, const Tensor& out);
  void identity(const Tensor& x, const Tensor& out);
  // all_reduce over the ring, then the reshard split; returns the rank's chunk.
  Tensor reduceThenSplit(const Tensor& partial);

  ProgramBuilder& b_;
  const GenOptions& opts_;
  bool legacy_;
  int64_t t_, tp_ring_, dp_ring_;
};

}  // namespace spopt::gen
