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
// fill_constant(1) as loss@GRAD, then reduce_sum_grad: returns out@GRAD.
Tensor lossGrad(ProgramBuilder& b, const Tensor& out, const Tensor& loss);

// Trainable parameters in creation order and, once the backward pass has made them, their grads.
class Trainables {
 public:
  void add(const Tensor& param) { params_.push_back(param); }
  void setGrad(const Tensor& param, const Tensor& grad) { grads_.emplace(param.name, grad); }
  // Data-parallel sums of every gradient, then one sgd per parameter (ParamOut aliases Param).
  void emitOptimizer(ProgramBuilder& b, TensorParallel& tp, const GenOptions& o, const Tensor& lr) const;

 private:
  std::vector<Tensor> params_;
  std::unordered_map<std::string, Tensor> grads_;
};

// Paddle's VarType number of a dtype (fill_constant's dtype attribute).
int paddleDataType(DType t);

}  // namespace spopt::gen
