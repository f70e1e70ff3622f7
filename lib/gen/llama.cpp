// Llama with Megatron tensor parallelism (see models.h, tensor_parallel.h and lm_head.h). Per
// rank: activations [s, b, H] (s = S/T with sequence parallelism); the fused QKV projection laid
// out per head as [q | k | v] (as gpt's), q and k rotated in [S, b, a, d] (time-major); gate and
// up column-parallel [H, F/T], down row-parallel [F/T, H]. No biases, no dropout.
#include <cmath>
#include <vector>

#include "gen/lm_head.h"
#include "gen/models.h"
#include "gen/nn_llama.h"
#include "gen/tensor_parallel.h"
#include "gen/training.h"

namespace spopt::gen {
namespace {


struct LlamaLayer {
  Tensor x;
  RmsNorm norm1;
  Tensor column1;
  Linear qkv;
  Tensor qkv4, qkv4_xshape;
  std::vector<Tensor> qkv_split;  // q, k, v: [S, b, a, d]
  Rotary rope;
  Tensor heads[3], heads_xshape[3];  // rotated q, rotated k, v: [b, a, S, d]
  Tensor scores, scaled, masked, probs;
  Tensor context, context_t, context_t_xshape, context_f, context_f_xshape;
  Linear proj;
  Tensor proj_row, x2;
  RmsNorm norm2;
  Tensor column2;
  Linear gate, up;
  Tensor act;
  Linear down;
  Tensor down_row, x3;
};

}  // namespace

void emitLlama(ProgramBuilder& b, const GenOptions& o, int64_t rank) {
  TensorParallel tp(b, o, rank);
  const int64_t S = o.seq, batch = o.batch / o.dp, H = o.hidden, T = o.tp;
  const int64_t heads = o.heads / T, dh = o.hidden / o.heads, ffn = o.ffnSize() / T;
  const double inv_sqrt_d = 1.0 / std::sqrt(double(dh));
  const DType dt = o.computeType();  // activations (bfloat16 under --amp)
  const Axis R = Axis::Rep, M = Axis::Mp, D = Axis::Dp;
  Tensor lr;
  if (o.optimizes()) lr = b.declare("learning_rate_0", {1}, {R}, o.dtype, true);
  if (o.amp) startMixedPrecision(b);

  b.setRole(kForward);
  Trainables trainables;
  LanguageModelEnds lm(b, o, tp);
  Tensor x = lm.embed();
  lm.addEmbedding(trainables);
  // The rotary tables: program inputs, the same [S, d] in every layout, as Llama's callers pass
  // them to fused_rotary_position_embedding (sin / cos of position x frequency, the frequencies
  // twice over d). Replay feeds them those values, not noise: the catalogue marks the op's sin and
  // cos operands (runtime/inputs.h).
  Tensor sin = b.declare("rotary_sin", {S, dh}, {R, R}, dt), cos = b.declare("rotary_cos", {S, dh}, {R, R}, dt);
  CausalMask mask;
  std::vector<LlamaLayer> layers(size_t(o.layers));
  for (int64_t l = 0; l < o.layers; ++l) {
    LlamaLayer& L = layers[size_t(l)];
    b.setScope(layerScope(l));
    L.x = x;
    L.norm1 = rmsNorm(b, x, dt);
    L.column1 = tp.columnInput(L.norm1.y);
    L.qkv = linear(b, L.column1, {R, M}, H, 3 * H / T);
    std::tie(L.qkv4, L.qkv4_xshape) = reshape(b, L.qkv.out, {0, 0, heads, 3 * dh}, {S, batch, heads, 3 * dh}, {R, D, M, R});
    L.qkv_split = split(b, L.qkv4, 3, 3);
    L.rope = rotary(b, L.qkv_split[0], L.qkv_split[1], sin, cos);
    const Tensor* to_heads[3] = {&L.rope.out_q, &L.rope.out_k, &L.qkv_split[2]};
    for (int i = 0; i < 3; ++i) std::tie(L.heads[i], L.heads_xshape[i]) = transpose(b, *to_heads[i], kToHeads);
    L.scores = matmul(b, L.heads[0], L.heads[1], true, {batch, heads, S, S}, {D, M, R, R});
    L.scaled = scale(b, L.scores, inv_sqrt_d);
    if (l == 0) mask = causalMask(b, L.scaled);
    L.masked = applyMask(b, mask, L.scaled);
    L.probs = softmax(b, L.masked);
    L.context = matmul(b, L.probs, L.heads[2], false, {batch, heads, S, dh}, {D, M, R, R});
    std::tie(L.context_t, L.context_t_xshape) = transpose(b, L.context, kFromHeads);
    std::tie(L.context_f, L.context_f_xshape) = reshape(b, L.context_t, {0, 0, heads * dh}, {S, batch, heads * dh}, {R, D, M});
    L.proj = linear(b, L.context_f, {M, R}, H / T, H);
    L.proj_row = tp.rowOutput(L.proj.out);
    L.x2 = add(b, x, L.proj_row);
    L.norm2 = rmsNorm(b, L.x2, dt);
    L.column2 = tp.columnInput(L.norm2.y);
    L.gate = linear(b, L.column2, {R, M}, H, ffn);
    L.up = linear(b, L.column2, {R, M}, H, ffn);
    L.act = swiglu(b, L.gate.out, L.up.out);
    L.down = linear(b, L.act, {M, R}, ffn, H);
    L.down_row = tp.rowOutput(L.down.out);
    L.x3 = add(b, L.x2, L.down_row);
    for (const Tensor* p : {&L.norm1.weight, &L.qkv.w, &L.proj.w, &L.norm2.weight, &L.gate.w, &L.up.w, &L.down.w})
      trainables.add(*p);
    x = L.x3;
  }
  b.setScope("/final_norm/");
  RmsNorm final_norm = rmsNorm(b, x, dt);
  trainables.add(final_norm.weight);
  lm.head(final_norm.y);
  lm.addHead(trainables);
  if (!o.backward) return;

  b.setRole(kBackward);
  // An rms_norm's grad op with the weight's grad summed over sequence shards.
  auto normGrad = [&](const RmsNorm& n, const Tensor& dy, const Tensor* dx) {
    Tensor dweight = b.grad(n.weight);
    rmsNormGrad(b, n, dy, dx, dweight);
    tp.syncSequenceShardedGrad(dweight);
    trainables.setGrad(n.weight, dweight);
  };
  Tensor dnorm = lm.headGrad();
  b.setScope("/final_norm/");
  Tensor dy = b.grad(final_norm.x);
  normGrad(final_norm, dnorm, &dy);
  for (int64_t l = o.layers - 1; l >= 0; --l) {
    const LlamaLayer& L = layers[size_t(l)];
    b.setScope(layerScope(l));
    // x3 = x2 + down(swiglu(gate(c2), up(c2))), c2 = rms_norm(x2) brought to the column layout.
    Tensor dx2_residual = b.gradPart(L.x2, 0), ddown_row = b.grad(L.down_row);
    addGrad(b, L.x2, L.down_row, dy, &dx2_residual, &ddown_row);
    Tensor ddown = tp.rowOutputGrad(L.down.out, ddown_row);
    Tensor dact = b.grad(L.act), dw_down = b.grad(L.down.w);
    matmulGrad(b, L.act, L.down.w, ddown, false, &dact, &dw_down);
    Tensor dgate = b.grad(L.gate.out), dup = b.grad(L.up.out);
    swigluGrad(b, L.gate.out, L.up.out, dact, dgate, dup);
    // gate and up both read c2: their input grads are summed before the column border.
    Tensor dcolumn2 = tp.columnInputGradTarget(L.norm2.y, L.column2), dw_gate = b.grad(L.gate.w), dw_up = b.grad(L.up.w);
    Tensor dc2_gate = b.gradPart(L.column2, 0), dc2_up = b.gradPart(L.column2, 1);
    matmulGrad(b, L.column2, L.gate.w, dgate, false, &dc2_gate, &dw_gate);
    matmulGrad(b, L.column2, L.up.w, dup, false, &dc2_up, &dw_up);
    sumInto(b, {dc2_gate, dc2_up}, dcolumn2);
    Tensor dnorm2 = tp.columnInputGrad(L.norm2.y, dcolumn2);
    Tensor dx2_norm = b.gradPart(L.x2, 1);
    normGrad(L.norm2, dnorm2, &dx2_norm);
    Tensor dx2 = sumGrads(b, {dx2_residual, dx2_norm}, L.x2);

    // x2 = x + proj(attention(rope(qkv(c1)))), c1 = rms_norm(x) in the column layout.
    Tensor dx_residual = b.gradPart(L.x, 0), dproj_row = b.grad(L.proj_row);
    addGrad(b, L.x, L.proj_row, dx2, &dx_residual, &dproj_row);
    Tensor dproj = tp.rowOutputGrad(L.proj.out, dproj_row);
    Tensor dcontext_f = b.grad(L.context_f), dw_proj = b.grad(L.proj.w);
    matmulGrad(b, L.context_f, L.proj.w, dproj, false, &dcontext_f, &dw_proj);
    Tensor dcontext_t = reshapeGrad(b, L.context_f_xshape, dcontext_f, L.context_t);
    Tensor dcontext = transposeGrad(b, L.context_t_xshape, dcontext_t, kFromHeads, L.context);
    Tensor dprobs = b.grad(L.probs), dv = b.grad(L.heads[2]);
    matmulGrad(b, L.probs, L.heads[2], dcontext, false, &dprobs, &dv);
    Tensor dmasked = softmaxGrad(b, L.probs, dprobs, L.masked);
    Tensor dscaled = applyMaskGrad(b, mask, L.scaled, dmasked);
    Tensor dscores = scaleGrad(b, dscaled, inv_sqrt_d, L.scores);
    Tensor dq = b.grad(L.heads[0]), dk = b.grad(L.heads[1]);
    matmulGrad(b, L.heads[0], L.heads[1], dscores, true, &dq, &dk);
    Tensor drot_q = transposeGrad(b, L.heads_xshape[0], dq, kToHeads, L.rope.out_q);
    Tensor drot_k = transposeGrad(b, L.heads_xshape[1], dk, kToHeads, L.rope.out_k);
    Tensor dsplit_v = transposeGrad(b, L.heads_xshape[2], dv, kToHeads, L.qkv_split[2]);
    auto [dsplit_q, dsplit_k] = rotaryGrad(b, L.rope, drot_q, drot_k);
    Tensor dqkv4 = concatGrads(b, {dsplit_q, dsplit_k, dsplit_v}, 3, L.qkv4);
    Tensor dqkv_out = reshapeGrad(b, L.qkv4_xshape, dqkv4, L.qkv.out);
    Tensor dcolumn1 = tp.columnInputGradTarget(L.norm1.y, L.column1), dw_qkv = b.grad(L.qkv.w);
    matmulGrad(b, L.column1, L.qkv.w, dqkv_out, false, &dcolumn1, &dw_qkv);
    Tensor dnorm1 = tp.columnInputGrad(L.norm1.y, dcolumn1);
    Tensor dx_norm = b.gradPart(L.x, 1);
    normGrad(L.norm1, dnorm1, &dx_norm);
    for (auto [p, g] : {std::pair{&L.qkv.w, &dw_qkv}, {&L.proj.w, &dw_proj}, {&L.gate.w, &dw_gate}, {&L.up.w, &dw_up},
                        {&L.down.w, &dw_down}})
      trainables.setGrad(*p, *g);
    dy = sumGrads(b, {dx_residual, dx_norm}, L.x);
  }
  lm.embedGrad(dy);
  lm.setGrads(trainables);
  trainables.emitOptimizer(b, tp, o, lr);
}

}  // namespace spopt::gen
