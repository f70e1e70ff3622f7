#pragma once
// The kinds of collective ops and their spellings in the two dialects of format v1: legacy
// (`c_allreduce_sum`, `c_reducescatter`, ... with slots X/Out) and current (`all_reduce`,
// `reduce_scatter`, ... with slots x/out and all-reduce's `reduce_type` attr). In lib/ir so that the
// op builder (ir/op_builder.h) can make collectives; analysis/collectives.h reads them back.
#include <string_view>

namespace spopt {

// Reduce (c_reduce_sum): the sum lands on the root; the other members keep their input.
// KernelAllReduce: a compute op whose kernel all-reduces small buffers over the op's ring
// (c_softmax_with_cross_entropy's row max and sums). It takes part in the ring like any collective
// (paired by issue order, checked across ranks, costed), but replay runs its kernel, handing it the
// ring (runtime/kernels/kernels.h KernelRing); it has no spelling of its own.
enum class CollectiveKind { AllReduce, ReduceScatter, AllGather, Broadcast, Identity, Reduce, KernelAllReduce };
enum class ReduceOp : int { Sum = 0, Max = 1, Min = 2, Prod = 3, Avg = 4 };

// Point-to-point: one rank of a ring sends a tensor to one other member (`peer`, its position in
// the ring), which receives it. Not a collective: only the two ranks take part, and the k-th send
// from a to b on a ring pairs with b's k-th receive from a on that ring (NCCL's rule).
enum class P2PKind { Send, Recv };

// The op type for a kind in a dialect ("c_reducescatter" / "reduce_scatter", ...); an all-reduce
// is "c_allreduce_sum" / "all_reduce" (legacy spells other reductions in the type: see below).
std::string_view collectiveOpType(CollectiveKind k, bool legacy);
// The legacy all-reduce type of a reduction ("c_allreduce_max", ...); "" for Avg (no legacy op).
std::string_view legacyAllReduceType(ReduceOp r);
// Whether a kind has a root, and the attribute naming its position in the ring ("root" for
// broadcast, Paddle's "root_id" for reduce); "" for the others.
std::string_view collectiveRootAttr(CollectiveKind k);

}  // namespace spopt
