#pragma once
// What a CPU kernel sees of one op's operands, over the tensors an executor holds: the local and
// mpi executors' values, and the nccl backend's host copies for an op it has no device kernel for.
// One piece, so that every backend hands a kernel the same view: a PIR vector read or written in
// one slot appears as its parts, one per index (ops/vector_parts.h); an operand whose buffer the
// kernel does not read (the catalogue's reads_buffer = false) as its shape and dtype only.
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "ops/op_view.h"
#include "runtime/kernels/kernels.h"

namespace spopt::rt {

class OpTensorsIO final : public KernelIO {
 public:
  // The tensor an input var holds (nullptr or an empty tensor: none).
  using Lookup = std::function<Tensor*(const Var&)>;
  // `outs`: the op's results, each var once, in the buffers replayShape gives them.
  OpTensorsIO(const OpView& op, Lookup in, std::vector<std::pair<const Var*, Tensor>>& outs)
      : op_(op), in_(std::move(in)), outs_(outs) {}
  const Tensor* input(std::string_view slot, size_t i) const override;
  size_t inputCount(std::string_view slot) const override;
  Tensor* output(std::string_view slot, size_t i) override;
  size_t outputCount(std::string_view slot) const override;

 private:
  const Var* vectorIn(std::string_view slot) const;
  std::optional<std::vector<std::vector<int64_t>>> vectorOut(std::string_view slot) const;
  Tensor* find(const Var* var);

  const OpView& op_;
  Lookup in_;
  std::vector<std::pair<const Var*, Tensor>>& outs_;
  mutable std::deque<Tensor> shape_only_;  // stable addresses for the kernel's pointers (and vector parts)
};

// The buffer replay gives a var `op` writes: its declared shape, or for a vector result whose
// parts the program says (ops/vector_parts.h), room for every part.
std::vector<int64_t> replayShape(const Op& op, const Var& v);

// Whether `op` reads or writes a PIR vector value in a slot (what OpTensorsIO takes apart): a
// kernel that indexes its slots directly (the nccl backend's device kernels) would see the whole.
bool touchesVector(const OpView& op);

}  // namespace spopt::rt
