#pragma once
// Building blocks shared by the models: each emits one Paddle op (forward) or its grad op
// (backward) with ops.md's slots and attributes, and declares the vars it produces.
// Forward outputs are named the Paddle way ("gelu_3.tmp_0"); gradients are "<var>@GRAD".
#include <optional>

#include "gen/program_builder.h"

namespace spopt::gen {

struct LayerNorm {
  Tensor x, scale, bias, y, mean, variance;
  bool bias_trainable = true;  // the mlp freezes the bias, as Paddle's test does
};

struct Dropout {
  Tensor x, out, mask;
  double prob = 0;
  int64_t seed = 0;  // fixed per op (fix_seed), as Paddle's auto-parallel seeds each dropout
};

// A linear layer's weight "linear_N.w_0" (local shape, sharding) and its output "linear_N.tmp_0".
struct Linear {
  Tensor x, w, out;
};

// The attention's transposes between the activation layout and per-head matrices.
inline const std::vector<int64_t> kToHeads{1, 2, 0, 3};    // [S, b, a, d] -> [b, a, S, d]
inline const std::vector<int64_t> kFromHeads{2, 0, 1, 3};  // [b, a, S, d] -> [S, b, a, d]

// Parameters: persistable, named "<prefix>.w_0" / "<prefix>.b_0". Under mixed precision the
// persistable var is the float32 master and the returned tensor its compute-type copy
// "<name>.cast_bf16", made by a cast right here (where the first use follows).
Tensor parameter(ProgramBuilder& b, std::string name, std::vector<int64_t> shape, std::vector<Axis> axes, DType dtype);

LayerNorm layerNorm(ProgramBuilder& b, const Tensor& x, DType dtype, bool bias_trainable);
Tensor gelu(ProgramBuilder& b, const Tensor& x);
// cast x into out (out's dtype).
void castInto(ProgramBuilder& b, const Tensor& x, const Tensor& out);
Dropout dropout(ProgramBuilder& b, const Tensor& x, double prob);
// x [.., K] times a weight [K, N] created here (sharded by w_axes) -> [.., N].
Linear linear(ProgramBuilder& b, const Tensor& x, std::vector<Axis> w_axes, int64_t local_in, int64_t local_out);
Tensor matmul(ProgramBuilder& b, const Tensor& x, const Tensor& y, bool trans_y, std::vector<int64_t> shape,
              std::vector<Axis> axes);
Tensor scale(ProgramBuilder& b, const Tensor& x, double factor);
Tensor softmax(ProgramBuilder& b, const Tensor& x);
Tensor add(ProgramBuilder& b, const Tensor& x, const Tensor& y);
// reshape2 / transpose2 with their XShape output; returns {out, xshape}.
std::pair<Tensor, Tensor> reshape(ProgramBuilder& b, const Tensor& x, std::vector<int64_t> shape_attr,
                                  std::vector<int64_t> out_shape, std::vector<Axis> out_axes);
std::pair<Tensor, Tensor> transpose(ProgramBuilder& b, const Tensor& x, std::vector<int64_t> perm);
std::vector<Tensor> split(ProgramBuilder& b, const Tensor& x, int axis, int64_t num);

// Backward. `dx` is where X@GRAD goes, or nullptr when x needs no gradient.
void layerNormGrad(ProgramBuilder& b, const LayerNorm& ln, const Tensor& dy, const Tensor* dx, const Tensor& dscale,
                   const Tensor* dbias);
Tensor geluGrad(ProgramBuilder& b, const Tensor& x, const Tensor& dy);
Tensor dropoutGrad(ProgramBuilder& b, const Dropout& d, const Tensor& dy);
void matmulGrad(ProgramBuilder& b, const Tensor& x, const Tensor& y, const Tensor& dout, bool trans_y, const Tensor* dx,
                const Tensor* dy);
Tensor scaleGrad(ProgramBuilder& b, const Tensor& dout, double factor, const Tensor& x);
Tensor softmaxGrad(ProgramBuilder& b, const Tensor& out, const Tensor& dout, const Tensor& x);
void addGrad(ProgramBuilder& b, const Tensor& x, const Tensor& y, const Tensor& dout, const Tensor* dx, const Tensor* dy);
Tensor reshapeGrad(ProgramBuilder& b, const Tensor& xshape, const Tensor& dout, const Tensor& x);
Tensor transposeGrad(ProgramBuilder& b, const Tensor& xshape, const Tensor& dout, std::vector<int64_t> perm,
                     const Tensor& x);
// split's grad: concat of the outputs' grads along the split axis into x@GRAD.
Tensor concatGrads(ProgramBuilder& b, const std::vector<Tensor>& douts, int axis, const Tensor& x);
// Gradient accumulation: sum of the parts into x@GRAD, or into `out`.
Tensor sumGrads(ProgramBuilder& b, const std::vector<Tensor>& parts, const Tensor& x);
void sumInto(ProgramBuilder& b, const std::vector<Tensor>& parts, const Tensor& out);

// Mean and Variance of layer_norm are float32 for 16-bit models, as in Paddle.
DType statsType(DType t);

}  // namespace spopt::gen
