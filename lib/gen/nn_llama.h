#pragma once
// Llama's building blocks (see nn.h for the conventions): one Paddle op or grad op each, with
// the PHI slot names the legacy programs of these ops use (rms_norm's x / norm_weight / out).
#include "gen/nn.h"

namespace spopt::gen {

struct RmsNorm {
  Tensor x, weight, y, inv_var;
};

// Rotary embedding of q and k, [S, b, a, d] (time_major), by the tables sin and cos [S, d].
struct Rotary {
  Tensor q, k, sin, cos, out_q, out_k;
};

// The causal mask of scores [b, a, S, S]: where(lower triangle, scores, -1e4). Built once from
// the first layer's scores (its ops in `/causal_mask/`) and read by every layer.
struct CausalMask {
  Tensor keep, fill;  // bool lower triangle; the value of masked scores
};

RmsNorm rmsNorm(ProgramBuilder& b, const Tensor& x, DType dtype);
Rotary rotary(ProgramBuilder& b, const Tensor& q, const Tensor& k, const Tensor& sin, const Tensor& cos);
Tensor swiglu(ProgramBuilder& b, const Tensor& gate, const Tensor& up);
CausalMask causalMask(ProgramBuilder& b, const Tensor& scores);
Tensor applyMask(ProgramBuilder& b, const CausalMask& m, const Tensor& scores);

void rmsNormGrad(ProgramBuilder& b, const RmsNorm& n, const Tensor& dy, const Tensor* dx, const Tensor& dweight);
// Returns {q@GRAD, k@GRAD}.
std::pair<Tensor, Tensor> rotaryGrad(ProgramBuilder& b, const Rotary& r, const Tensor& dout_q, const Tensor& dout_k);
void swigluGrad(ProgramBuilder& b, const Tensor& gate, const Tensor& up, const Tensor& dout, const Tensor& dgate,
                const Tensor& dup);
Tensor applyMaskGrad(ProgramBuilder& b, const CausalMask& m, const Tensor& scores, const Tensor& dout);

}  // namespace spopt::gen
