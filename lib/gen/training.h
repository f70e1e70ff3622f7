#pragma once
// What every generated model shares after its layers: the loss, the seed of the backward pass,
// and the optimizer step with its data-parallel gradient sums.
#include <string>
#include <unordered_map>
#include <vector>

#include "gen/options.h"
#include "gen/program_builder.h"
#include "gen/tensor_parallel.h"

namespace spopt::gen {

// The fetched loss: reduce_sum over the rank's whole output. Each rank's loss covers its own shard
// of the activations (its sequence chunk under sequence parallelism, its batch chunk under data
// parallelism); the model's loss is the sum over shards. It is not all-reduced, so the program
// holds exactly the collectives of the model (as Paddle's partitioner emits it).
inline constexpr const char* kLossName = "reduce_sum_0.tmp_0";

Tensor lossOf(ProgramBuilder& b, const Tensor& out);
// --amp: enables the builder's mixed precision and sets the loss-scaling state (fill_constant, as
// Paddle's startup program does: a generated job is one step). Call before any parameter.
// Under it lossOf also casts the loss to float32 and scales it, and lossGrad seeds that product.
void startMixedPrecision(ProgramBuilder& b);
// fill_constant(1) as loss@GRAD, then reduce_sum_grad: returns out@GRAD.
Tensor lossGrad(ProgramBuilder& b, const Tensor& out, const Tensor& loss);

// Trainable parameters in creation order and, once the backward pass has made them, their grads.
class Trainables {
 public:
  void add(const Tensor& param) { params_.push_back(param); }
  void setGrad(const Tensor& param, const Tensor& grad) { grads_.emplace(param.name, grad); }
  // Data-parallel sums of every gradient, then one sgd or adamw per parameter (updated in place).
  // Under mixed precision the summed bfloat16 gradients are cast to float32, unscaled
  // (check_finite_and_unscale, the found-inf flag max-reduced over the tensor-parallel ring) and
  // update_loss_scaling runs before the float32 masters are updated.
  void emitOptimizer(ProgramBuilder& b, TensorParallel& tp, const GenOptions& o, const Tensor& lr) const;

 private:
  std::vector<Tensor> params_;
  std::unordered_map<std::string, Tensor> grads_;
};

// Paddle's VarType number of a dtype (fill_constant's dtype attribute).
int paddleDataType(DType t);

}  // namespace spopt::gen
