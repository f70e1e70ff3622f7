// The mlp of Paddle's sequence-parallel test, forward, backward and sgd (see models.h).
#include <vector>

#include "gen/models.h"
#include "gen/nn.h"
#include "gen/tensor_parallel.h"
#include "gen/training.h"

namespace spopt::gen {
namespace {

struct MlpLayer {
  LayerNorm ln0;
  Tensor gelu0, column_in;
  Linear fc0;
  Tensor gelu1;
  Linear fc1;
  Tensor row_out;
  Dropout drop;
  Tensor gelu2;
  LayerNorm ln1;
};


}  // namespace

void emitMlp(ProgramBuilder& b, const GenOptions& o, int64_t rank) {
  TensorParallel tp(b, o, rank);
  const int64_t batch = o.batch / o.dp, hidden = o.hidden, ffn = o.ffnSize() / o.tp;
  const DType dt = o.computeType();  // activations (bfloat16 under --amp)
  Tensor lr;
  if (o.optimizes()) lr = b.declare("learning_rate_0", {1}, {Axis::Rep}, o.dtype, true);
  if (o.amp) startMixedPrecision(b);

  b.setRole(kForward);
  Tensor x = b.declare("input", {tp.localSeq(), batch, hidden}, {tp.seqAxis(), Axis::Dp, Axis::Rep}, dt);
  Trainables trainables;
  std::vector<MlpLayer> layers(size_t(o.layers));
  for (int64_t l = 0; l < o.layers; ++l) {
    MlpLayer& L = layers[size_t(l)];
    b.setScope(layerScope(l));
    L.ln0 = layerNorm(b, x, dt, /*bias_trainable=*/false);
    L.gelu0 = gelu(b, L.ln0.y);
    L.column_in = tp.columnInput(L.gelu0);
    L.fc0 = linear(b, L.column_in, {Axis::Rep, Axis::Mp}, hidden, ffn);
    L.gelu1 = gelu(b, L.fc0.out);
    L.fc1 = linear(b, L.gelu1, {Axis::Mp, Axis::Rep}, ffn, hidden);
    L.row_out = tp.rowOutput(L.fc1.out);
    L.drop = dropout(b, L.row_out, o.dropout);
    L.gelu2 = gelu(b, L.drop.out);
    L.ln1 = layerNorm(b, L.gelu2, dt, /*bias_trainable=*/false);
    for (const Tensor* p : {&L.ln0.scale, &L.fc0.w, &L.fc1.w, &L.ln1.scale}) trainables.add(*p);
    x = L.ln1.y;
  }
  Tensor loss = lossOf(b, x);
  if (!o.backward) return;

  b.setRole(kBackward);
  Tensor dy = lossGrad(b, x, loss);
  for (int64_t l = o.layers - 1; l >= 0; --l) {
    const MlpLayer& L = layers[size_t(l)];
    b.setScope(layerScope(l));
    Tensor dgelu2 = b.grad(L.gelu2), dscale1 = b.grad(L.ln1.scale);
    layerNormGrad(b, L.ln1, dy, &dgelu2, dscale1, nullptr);
    tp.syncSequenceShardedGrad(dscale1);
    Tensor ddrop = geluGrad(b, L.drop.out, dgelu2);
    Tensor drow = dropoutGrad(b, L.drop, ddrop);
    Tensor dfc1 = tp.rowOutputGrad(L.fc1.out, drow);
    Tensor dgelu1 = b.grad(L.gelu1), dw1 = b.grad(L.fc1.w);
    matmulGrad(b, L.gelu1, L.fc1.w, dfc1, false, &dgelu1, &dw1);
    Tensor dfc0 = geluGrad(b, L.fc0.out, dgelu1);
    Tensor dcolumn = tp.columnInputGradTarget(L.gelu0, L.column_in), dw0 = b.grad(L.fc0.w);
    matmulGrad(b, L.column_in, L.fc0.w, dfc0, false, &dcolumn, &dw0);
    Tensor dgelu0 = tp.columnInputGrad(L.gelu0, dcolumn);
    Tensor dln0 = geluGrad(b, L.ln0.y, dgelu0);
    Tensor dscale0 = b.grad(L.ln0.scale);
    Tensor dx;
    if (l > 0) dx = b.grad(L.ln0.x);  // the first layer's input is fed data: no gradient
    layerNormGrad(b, L.ln0, dln0, l > 0 ? &dx : nullptr, dscale0, nullptr);
    tp.syncSequenceShardedGrad(dscale0);
    trainables.setGrad(L.ln0.scale, dscale0);
    trainables.setGrad(L.fc0.w, dw0);
    trainables.setGrad(L.fc1.w, dw1);
    trainables.setGrad(L.ln1.scale, dscale1);
    dy = dx;
  }
  trainables.emitOptimizer(b, tp, o, lr);
}

}  // namespace spopt::gen
