#include "gen/training.h"

#include <stdexcept>

namespace spopt::gen {

int paddleDataType(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::Int32: return 2;
    case DType::Int64: return 3;
    case DType::Float16: return 4;
    case DType::Float32: return 5;
    case DType::Float64: return 6;
    case DType::UInt8: return 20;
    case DType::BFloat16: return 22;
  }
  return 5;
}

Tensor lossOf(ProgramBuilder& b, const Tensor& out) {
  Tensor loss = b.declare(kLossName, {1}, {Axis::Rep}, out.dtype);
  b.op("reduce_sum")
      .in("X", out)
      .out("Out", loss)
      .ints("dim", {})
      .flag("keep_dim", false)
      .flag("reduce_all", true)
      .role(kForward | kLoss)
      .scope("/loss/");
  return loss;
}

Tensor lossGrad(ProgramBuilder& b, const Tensor& out, const Tensor& loss) {
  Tensor dloss = b.grad(loss);
  b.op("fill_constant")
      .out("Out", dloss)
      .ints("shape", {1})
      .real("value", 1.0)
      .integer("dtype", paddleDataType(loss.dtype))
      .flag("force_cpu", false)
      .role(kBackward | kLoss)
      .scope("/loss/");
  Tensor dout = b.grad(out);
  b.op("reduce_sum_grad")
      .in("X", out)
      .in("Out@GRAD", dloss)
      .out("X@GRAD", dout)
      .ints("dim", {})
      .flag("keep_dim", false)
      .flag("reduce_all", true)
      .role(kBackward)
      .scope("/loss/");
  return dout;
}

void Trainables::emitOptimizer(ProgramBuilder& b, TensorParallel& tp, const GenOptions& o, const Tensor& lr) const {
  b.setScope("/optimizer/");
  b.setRole(kBackward);
  auto gradOf = [&](const Tensor& p) -> const Tensor& {
    auto it = grads_.find(p.name);
    if (it == grads_.end()) throw std::logic_error("gen: parameter " + p.name + " has no gradient");
    return it->second;
  };
  for (const auto& p : params_) tp.syncDataParallelGrad(gradOf(p));
  if (!o.optimizes()) return;
  b.setRole(kOptimize);
  if (o.optimizer == Optimizer::Sgd) {
    for (const auto& p : params_)
      b.op("sgd").in("Param", p).in("LearningRate", lr).in("Grad", gradOf(p)).out("ParamOut", p).flag("multi_precision", false);
    return;
  }
  // AdamW as Paddle's optimizer writes it: per parameter two moments sharded like it and two
  // replicated beta powers, all persistable and named after the parameter, updated in place.
  for (const auto& p : params_) {
    Tensor m1 = b.declare(p.name + "_moment1_0", p.shape, p.axes, p.dtype, true);
    Tensor m2 = b.declare(p.name + "_moment2_0", p.shape, p.axes, p.dtype, true);
    Tensor b1 = b.declare(p.name + "_beta1_pow_acc_0", {1}, {Axis::Rep}, p.dtype, true);
    Tensor b2 = b.declare(p.name + "_beta2_pow_acc_0", {1}, {Axis::Rep}, p.dtype, true);
    b.op("adamw")
        .in("Param", p)
        .in("Grad", gradOf(p))
        .in("LearningRate", lr)
        .in("Moment1", m1)
        .in("Moment2", m2)
        .in("Beta1Pow", b1)
        .in("Beta2Pow", b2)
        .out("ParamOut", p)
        .out("Moment1Out", m1)
        .out("Moment2Out", m2)
        .out("Beta1PowOut", b1)
        .out("Beta2PowOut", b2)
        .real("beta1", 0.9)
        .real("beta2", 0.999)
        .real("epsilon", 1e-8)
        .real("lr_ratio", 1.0)
        .real("coeff", 0.01)
        .flag("with_decay", true)
        .flag("lazy_mode", false)
        .flag("multi_precision", false);
  }
}

}  // namespace spopt::gen
