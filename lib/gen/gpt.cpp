// A GPT/Llama-style decoder with Megatron tensor parallelism (see models.h and tensor_parallel.h).
// Shapes per rank: activations [s, b, H] (s = S/T with sequence parallelism), the fused QKV
// projection [S, b, 3H/T] laid out per head as [q | k | v] so that each rank holds whole heads,
// attention per local head [b, A/T, S, S].
#include <cmath>
#include <optional>
#include <vector>

#include "gen/lm_head.h"
#include "gen/models.h"
#include "gen/nn.h"
#include "gen/tensor_parallel.h"
#include "gen/training.h"

namespace spopt::gen {
namespace {


struct Attention {
  Tensor qkv4, qkv4_xshape;   // [S, b, a, 3d]
  std::vector<Tensor> qkv;    // q, k, v: [S, b, a, d]
  Tensor heads[3], heads_xshape[3];  // [b, a, S, d]
  Tensor scores, scaled, probs;
  Dropout probs_drop;
  Tensor context, context_t, context_t_xshape, context_f, context_f_xshape;
};

struct GptLayer {
  Tensor x;
  LayerNorm ln1;
  Tensor column1;
  Linear qkv;
  Attention attn;
  Linear proj;
  Tensor proj_row;
  Dropout drop1;
  Tensor x2;
  LayerNorm ln2;
  Tensor column2;
  Linear fc1;
  Tensor act;
  Linear fc2;
  Tensor fc2_row;
  Dropout drop2;
  Tensor x3;
};


}  // namespace

void emitGpt(ProgramBuilder& b, const GenOptions& o, int64_t rank) {
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
  // With --vocab the layers read the embedding of token ids and the loss is the LM head's
  // cross-entropy; without, they read the float `input` and the loss is a reduce_sum.
  std::optional<LanguageModelEnds> lm;
  Tensor x;
  if (o.hasLmHead()) {
    lm.emplace(b, o, tp);
    x = lm->embed();
    lm->addEmbedding(trainables);
  } else {
    x = b.declare("input", {tp.localSeq(), batch, H}, {tp.seqAxis(), D, R}, dt);
  }
  auto addNorm = [&](const LayerNorm& ln) {
    trainables.add(ln.scale);
    trainables.add(ln.bias);
  };
  std::vector<GptLayer> layers(size_t(o.layers));
  for (int64_t l = 0; l < o.layers; ++l) {
    GptLayer& L = layers[size_t(l)];
    Attention& A = L.attn;
    b.setScope(layerScope(l));
    L.x = x;
    L.ln1 = layerNorm(b, x, dt, true);
    L.column1 = tp.columnInput(L.ln1.y);
    L.qkv = linear(b, L.column1, {R, M}, H, 3 * H / T);
    std::tie(A.qkv4, A.qkv4_xshape) = reshape(b, L.qkv.out, {0, 0, heads, 3 * dh}, {S, batch, heads, 3 * dh}, {R, D, M, R});
    A.qkv = split(b, A.qkv4, 3, 3);
    for (int i = 0; i < 3; ++i) std::tie(A.heads[i], A.heads_xshape[i]) = transpose(b, A.qkv[size_t(i)], kToHeads);
    A.scores = matmul(b, A.heads[0], A.heads[1], true, {batch, heads, S, S}, {D, M, R, R});
    A.scaled = scale(b, A.scores, inv_sqrt_d);
    A.probs = softmax(b, A.scaled);
    A.probs_drop = dropout(b, A.probs, o.dropout);
    A.context = matmul(b, A.probs_drop.out, A.heads[2], false, {batch, heads, S, dh}, {D, M, R, R});
    std::tie(A.context_t, A.context_t_xshape) = transpose(b, A.context, kFromHeads);
    std::tie(A.context_f, A.context_f_xshape) = reshape(b, A.context_t, {0, 0, heads * dh}, {S, batch, heads * dh}, {R, D, M});
    L.proj = linear(b, A.context_f, {M, R}, H / T, H);
    L.proj_row = tp.rowOutput(L.proj.out);
    L.drop1 = dropout(b, L.proj_row, o.dropout);
    L.x2 = add(b, x, L.drop1.out);
    L.ln2 = layerNorm(b, L.x2, dt, true);
    L.column2 = tp.columnInput(L.ln2.y);
    L.fc1 = linear(b, L.column2, {R, M}, H, ffn);
    L.act = gelu(b, L.fc1.out);
    L.fc2 = linear(b, L.act, {M, R}, ffn, H);
    L.fc2_row = tp.rowOutput(L.fc2.out);
    L.drop2 = dropout(b, L.fc2_row, o.dropout);
    L.x3 = add(b, L.x2, L.drop2.out);
    addNorm(L.ln1);
    trainables.add(L.qkv.w);
    trainables.add(L.proj.w);
    addNorm(L.ln2);
    trainables.add(L.fc1.w);
    trainables.add(L.fc2.w);
    x = L.x3;
  }
  b.setScope("/final_norm/");
  LayerNorm final_norm = layerNorm(b, x, dt, true);
  addNorm(final_norm);
  Tensor loss;
  if (lm) {
    lm->head(final_norm.y);
    lm->addHead(trainables);
  } else {
    loss = lossOf(b, final_norm.y);
  }
  if (!o.backward) return;

  b.setRole(kBackward);
  // A layer_norm's grad op with the parameter grads summed over sequence shards.
  auto normGrad = [&](const LayerNorm& ln, const Tensor& dy, const Tensor* dx) {
    Tensor dscale = b.grad(ln.scale), dbias = b.grad(ln.bias);
    layerNormGrad(b, ln, dy, dx, dscale, &dbias);
    tp.syncSequenceShardedGrad(dscale);
    tp.syncSequenceShardedGrad(dbias);
    trainables.setGrad(ln.scale, dscale);
    trainables.setGrad(ln.bias, dbias);
  };
  Tensor dnorm = lm ? lm->headGrad() : lossGrad(b, final_norm.y, loss);
  b.setScope("/final_norm/");
  Tensor dy = b.grad(final_norm.x);
  normGrad(final_norm, dnorm, &dy);
  for (int64_t l = o.layers - 1; l >= 0; --l) {
    const GptLayer& L = layers[size_t(l)];
    const Attention& A = L.attn;
    b.setScope(layerScope(l));
    // x3 = x2 + dropout(mlp(layer_norm(x2)))
    Tensor dx2_residual = b.gradPart(L.x2, 0), ddrop2 = b.grad(L.drop2.out);
    addGrad(b, L.x2, L.drop2.out, dy, &dx2_residual, &ddrop2);
    Tensor dfc2_row = dropoutGrad(b, L.drop2, ddrop2);
    Tensor dfc2 = tp.rowOutputGrad(L.fc2.out, dfc2_row);
    Tensor dact = b.grad(L.act), dw_fc2 = b.grad(L.fc2.w);
    matmulGrad(b, L.act, L.fc2.w, dfc2, false, &dact, &dw_fc2);
    Tensor dfc1 = geluGrad(b, L.fc1.out, dact);
    Tensor dcolumn2 = tp.columnInputGradTarget(L.ln2.y, L.column2), dw_fc1 = b.grad(L.fc1.w);
    matmulGrad(b, L.column2, L.fc1.w, dfc1, false, &dcolumn2, &dw_fc1);
    Tensor dln2 = tp.columnInputGrad(L.ln2.y, dcolumn2);
    Tensor dx2_norm = b.gradPart(L.x2, 1);
    normGrad(L.ln2, dln2, &dx2_norm);
    Tensor dx2 = sumGrads(b, {dx2_residual, dx2_norm}, L.x2);

    // x2 = x + dropout(attention(layer_norm(x))); the first layer's x is fed data (no gradient)
    // unless it is the embedding's output.
    const bool want_dx = l > 0 || lm;
    Tensor dx_residual, ddrop1 = b.grad(L.drop1.out);
    if (want_dx) dx_residual = b.gradPart(L.x, 0);
    addGrad(b, L.x, L.drop1.out, dx2, want_dx ? &dx_residual : nullptr, &ddrop1);
    Tensor dproj_row = dropoutGrad(b, L.drop1, ddrop1);
    Tensor dproj = tp.rowOutputGrad(L.proj.out, dproj_row);
    Tensor dcontext_f = b.grad(A.context_f), dw_proj = b.grad(L.proj.w);
    matmulGrad(b, A.context_f, L.proj.w, dproj, false, &dcontext_f, &dw_proj);
    Tensor dcontext_t = reshapeGrad(b, A.context_f_xshape, dcontext_f, A.context_t);
    Tensor dcontext = transposeGrad(b, A.context_t_xshape, dcontext_t, kFromHeads, A.context);
    Tensor dprobs_drop = b.grad(A.probs_drop.out), dv = b.grad(A.heads[2]);
    matmulGrad(b, A.probs_drop.out, A.heads[2], dcontext, false, &dprobs_drop, &dv);
    Tensor dprobs = dropoutGrad(b, A.probs_drop, dprobs_drop);
    Tensor dscaled = softmaxGrad(b, A.probs, dprobs, A.scaled);
    Tensor dscores = scaleGrad(b, dscaled, inv_sqrt_d, A.scores);
    Tensor dq = b.grad(A.heads[0]), dk = b.grad(A.heads[1]);
    matmulGrad(b, A.heads[0], A.heads[1], dscores, true, &dq, &dk);
    std::vector<Tensor> dqkv;
    for (int i = 0; i < 3; ++i) {
      const Tensor& dhead = i == 0 ? dq : i == 1 ? dk : dv;
      dqkv.push_back(transposeGrad(b, A.heads_xshape[i], dhead, kToHeads, A.qkv[size_t(i)]));
    }
    Tensor dqkv4 = concatGrads(b, dqkv, 3, A.qkv4);
    Tensor dqkv_out = reshapeGrad(b, A.qkv4_xshape, dqkv4, L.qkv.out);
    Tensor dcolumn1 = tp.columnInputGradTarget(L.ln1.y, L.column1), dw_qkv = b.grad(L.qkv.w);
    matmulGrad(b, L.column1, L.qkv.w, dqkv_out, false, &dcolumn1, &dw_qkv);
    Tensor dln1 = tp.columnInputGrad(L.ln1.y, dcolumn1);
    Tensor dx_norm;
    if (want_dx) dx_norm = b.gradPart(L.x, 1);
    normGrad(L.ln1, dln1, want_dx ? &dx_norm : nullptr);
    trainables.setGrad(L.qkv.w, dw_qkv);
    trainables.setGrad(L.proj.w, dw_proj);
    trainables.setGrad(L.fc1.w, dw_fc1);
    trainables.setGrad(L.fc2.w, dw_fc2);
    if (want_dx) dy = sumGrads(b, {dx_residual, dx_norm}, L.x);
  }
  if (lm) {
    lm->embedGrad(dy);
    lm->setGrads(trainables);
  }
  trainables.emitOptimizer(b, tp, o, lr);
}

}  // namespace spopt::gen
