#include "gen/training.h"

#include <stdexcept>

#include "gen/nn.h"

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

namespace {
void fill(ProgramBuilder& b, const Tensor& out, double value, int role) {
  b.op("fill_constant")
      .out("Out", out)
      .ints("shape", out.shape)
      .real("value", value)
      .integer("dtype", paddleDataType(out.dtype))
      .flag("force_cpu", false)
      .role(role);
}
}  // namespace

void startMixedPrecision(ProgramBuilder& b) {
  MixedPrecision& amp = b.enableMixedPrecision();
  amp.loss_scaling = b.declare("loss_scaling_0", {1}, {Axis::Rep}, DType::Float32, true);
  amp.good_steps = b.declare("num_good_steps_0", {1}, {Axis::Rep}, DType::Int32, true);
  amp.bad_steps = b.declare("num_bad_steps_0", {1}, {Axis::Rep}, DType::Int32, true);
  std::string scope = b.scope();
  b.setScope("/amp/");
  fill(b, amp.loss_scaling, 32768.0, kForward);
  fill(b, amp.good_steps, 0, kForward);
  fill(b, amp.bad_steps, 0, kForward);
  b.setScope(scope);
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
  if (MixedPrecision* amp = b.mixedPrecision()) {
    amp->loss_fp32 = b.declare(std::string(kLossName) + ".cast_fp32", {1}, {Axis::Rep}, DType::Float32);
    castInto(b, loss, amp->loss_fp32);
    amp->scaled_loss = b.declare("scaled_loss_0", {1}, {Axis::Rep}, DType::Float32);
    b.op("elementwise_mul")
        .in("X", amp->loss_fp32)
        .in("Y", amp->loss_scaling)
        .out("Out", amp->scaled_loss)
        .integer("axis", -1)
        .role(kForward | kLoss)
        .scope("/loss/");
  }
  return loss;
}

Tensor lossGrad(ProgramBuilder& b, const Tensor& out, const Tensor& loss) {
  Tensor dloss = b.grad(loss);
  std::string scope = b.scope();
  b.setScope("/loss/");
  if (MixedPrecision* amp = b.mixedPrecision()) {
    // The seed is d(scaled loss); the loss's own grad is the scale, cast down.
    Tensor dscaled = b.grad(amp->scaled_loss), dloss32 = b.grad(amp->loss_fp32);
    fill(b, dscaled, 1.0, kBackward | kLoss);
    b.op("elementwise_mul_grad")
        .in("X", amp->loss_fp32)
        .in("Y", amp->loss_scaling)
        .in("Out@GRAD", dscaled)
        .out("X@GRAD", dloss32)
        .integer("axis", -1)
        .role(kBackward);
    b.setRole(kBackward);
    castInto(b, dloss32, dloss);
  } else {
    fill(b, dloss, 1.0, kBackward | kLoss);
  }
  Tensor dout = b.grad(out);
  b.op("reduce_sum_grad")
      .in("X", out)
      .in("Out@GRAD", dloss)
      .out("X@GRAD", dout)
      .ints("dim", {})
      .flag("keep_dim", false)
      .flag("reduce_all", true)
      .role(kBackward);
  b.setScope(scope);
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
  // What the optimizer updates: the parameters, or under mixed precision their float32 masters
  // with the gradients cast up and unscaled.
  std::vector<std::pair<Tensor, Tensor>> updates;
  MixedPrecision* amp = b.mixedPrecision();
  for (const auto& p : params_) {
    if (!amp) {
      updates.emplace_back(p, gradOf(p));
      continue;
    }
    const Tensor& master = amp->masters.at(p.name);
    Tensor g32 = b.declare(master.name + "@GRAD", master.shape, master.axes, master.dtype);
    castInto(b, gradOf(p), g32);
    updates.emplace_back(master, g32);
  }
  if (amp) {
    b.setRole(kOptimize);
    std::vector<Tensor> grads;
    for (const auto& u : updates) grads.push_back(u.second);
    Tensor found = b.declare("found_infinite_0", {1}, {Axis::Rep}, DType::Bool);
    b.op("check_finite_and_unscale").in("X", grads).in("Scale", amp->loss_scaling).out("Out", grads).out("FoundInfinite", found);
    tp.syncFoundInfinite(found);
    b.op("update_loss_scaling")
        .in("X", grads)
        .in("FoundInfinite", found)
        .in("PrevLossScaling", amp->loss_scaling)
        .in("InGoodSteps", amp->good_steps)
        .in("InBadSteps", amp->bad_steps)
        .out("Out", grads)
        .out("LossScaling", amp->loss_scaling)
        .out("OutGoodSteps", amp->good_steps)
        .out("OutBadSteps", amp->bad_steps)
        .integer("incr_every_n_steps", 1000)
        .integer("decr_every_n_nan_or_inf", 2)
        .real("incr_ratio", 2.0)
        .real("decr_ratio", 0.5)
        .flag("stop_update", false);
  }
  if (!o.optimizes()) return;
  b.setRole(kOptimize);
  if (o.optimizer == Optimizer::Sgd) {
    for (const auto& [p, g] : updates)
      b.op("sgd").in("Param", p).in("LearningRate", lr).in("Grad", g).out("ParamOut", p).flag("multi_precision", false);
    return;
  }
  // AdamW as Paddle's optimizer writes it: per parameter two moments sharded like it and two
  // replicated beta powers, all persistable and named after the parameter, updated in place.
  for (const auto& [p, g] : updates) {
    Tensor m1 = b.declare(p.name + "_moment1_0", p.shape, p.axes, p.dtype, true);
    Tensor m2 = b.declare(p.name + "_moment2_0", p.shape, p.axes, p.dtype, true);
    Tensor b1 = b.declare(p.name + "_beta1_pow_acc_0", {1}, {Axis::Rep}, p.dtype, true);
    Tensor b2 = b.declare(p.name + "_beta2_pow_acc_0", {1}, {Axis::Rep}, p.dtype, true);
    b.op("adamw")
        .in("Param", p)
        .in("Grad", g)
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
