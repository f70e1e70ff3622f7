// The vocab-parallel kernels (Megatron's VocabParallelEmbedding and _VocabParallelCrossEntropy,
// Paddle's c_embedding and c_softmax_with_cross_entropy): each rank holds a shard of the vocab.
// c_softmax_with_cross_entropy is the one kernel that communicates: it all-reduces the row max and
// the row sums over its ring (KernelContext::ring), in double, so every member computes the same
// loss and its own shard of the global softmax.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/train_language.h"

namespace spopt::rt {
namespace {

// The shard's rows: global id `id` is local row id - start when it falls in [start, start + rows).
struct Shard {
  int64_t start, rows;
  int64_t local(int64_t id) const { return id >= start && id - start < rows ? id - start : -1; }
};

Shard shardOf(const KernelContext& c, const Table& t) {
  int64_t start = intAttr(c, "start_index", 0);
  if (start < 0) kernelFail(c, "start_index " + std::to_string(start) + " should be >= 0");
  return {start, t.rows};
}

// c_embedding: Out[i] = W[Ids[i] - start_index] for ids this shard holds, zeros for the others.
void shardEmbedding(KernelContext& c) {
  const Lookup io = lookupOf(c);
  Shard sh = shardOf(c, io.t);
  copyRows(c, io, [&](int64_t i) { return sh.local(idAt(io.ids, i)); });
}

// c_embedding_grad: W@GRAD[r] = sum of Out@GRAD[i] over the ids i that read row r of this shard,
// in double, grouped by row in position order (independent of how the ids interleave).
void shardEmbeddingGrad(KernelContext& c) {
  LookupGrad io = lookupGradOf(c);
  Shard sh = shardOf(c, io.t);
  std::vector<std::pair<int64_t, int64_t>> rows_positions;  // (local row, position)
  for (int64_t i = 0, n = io.ids.numel(); i < n; ++i)
    if (int64_t r = sh.local(idAt(io.ids, i)); r >= 0) rows_positions.emplace_back(r, i);
  sumRowsOfPositions(c, io, std::move(rows_positions));
}

// The class shard of a vocab-parallel loss: classes [rank x C, (rank + 1) x C) of nranks x C. The
// class axis is the last (Paddle's op has no axis attribute).
struct ClassShard {
  ClassView v;
  int64_t start, global;
};

ClassShard classShard(const KernelContext& c, const std::vector<int64_t>& shape) {
  if (shape.empty()) kernelFail(c, "Logits must have at least one dim");
  ClassView v{product(shape, 0, shape.size() - 1), shape.back(), 1, shape};
  v.reduced.back() = 1;
  int64_t rank = intAttr(c, "rank", 0), nranks = intAttr(c, "nranks", 0);
  if (nranks <= 0) kernelFail(c, "nranks " + std::to_string(nranks) + " should be positive");
  if (rank < 0 || rank >= nranks) kernelFail(c, "rank " + std::to_string(rank) + " is not a position among nranks " + std::to_string(nranks));
  return {v, rank * v.classes, nranks * v.classes};
}

// Row r's label as a local class (-1: another shard's), or -2 for ignore_index; fails outside the
// global classes. Checked before any communication, so a bad label fails every member alike.
int64_t shardLabel(const KernelContext& c, const Tensor& label, int64_t r, const ClassShard& s, int64_t ignore) {
  int64_t l = idAt(label, r);
  if (l == ignore) return -2;
  if (l < 0 || l >= s.global)
    kernelFail(c, "Label[" + std::to_string(r) + "] = " + std::to_string(l) + " is outside the " + std::to_string(s.global) + " classes");
  return l >= s.start && l - s.start < s.v.classes ? l - s.start : -1;
}

// c_softmax_with_cross_entropy: with M the ring's max of the row, S the ring's sum of exp(x - M)
// and P the ring's sum of the label's shifted logit (only the shard holding it adds one),
// Softmax = exp(x - M) / S on this shard and Loss = log S - P (0 where the label is ignore_index).
void shardSoftmaxCrossEntropy(KernelContext& c) {
  const Tensor& logits = requireInput(c, "Logits");
  const Tensor& label = requireInput(c, "Label");
  Tensor& softmax = requireOutput(c, "Softmax");
  Tensor& loss = requireOutput(c, "Loss");
  requireIds(c, "Label", label);
  requireSameStorage(c, "Softmax", softmax, "Logits", logits);
  requireSameStorage(c, "Loss", loss, "Logits", logits);
  ClassShard s = classShard(c, logits.shape());
  const ClassView& v = s.v;
  requireShape(c, "Softmax", softmax, logits.shape(), "Logits' shape");
  requireShape(c, "Loss", loss, v.reduced, "Logits' shape with the class axis 1");
  if (label.numel() != v.outer) requireShape(c, "Label", label, v.reduced, "Logits' shape with the class axis 1");
  if (!c.ring) kernelFail(c, "needs its ring (ring_id) to all-reduce over");
  if (c.ring->size() != intAttr(c, "nranks", 0) || c.ring->position() != intAttr(c, "rank", 0))
    kernelFail(c, "rank " + std::to_string(intAttr(c, "rank", 0)) + " / nranks " + std::to_string(intAttr(c, "nranks", 0)) +
                      " differ from position " + std::to_string(c.ring->position()) + " in a ring of " + std::to_string(c.ring->size()));
  int64_t ignore = intAttr(c, "ignore_index", -100);
  std::vector<int64_t> local(size_t(v.outer));
  for (int64_t r = 0; r < v.outer; ++r) local[size_t(r)] = shardLabel(c, label, r, s, ignore);
  Tensor row_max(DType::Float64, {v.outer});
  Tensor sums(DType::Float64, {2, v.outer});  // [shifted label logit; exp-sum] per row
  dispatchFloat(c, "Logits", logits, [&](auto tag) {
    using T = decltype(tag);
    const T* x = logits.data<T>();
    double* mx = row_max.data<double>();
    for (int64_t r = 0; r < v.outer; ++r) {
      const T* row = x + r * v.classes;
      double m = -INFINITY;
      for (int64_t k = 0; k < v.classes; ++k) m = std::max(m, double(row[k]));
      mx[r] = m;
    }
    c.ring->allReduce(row_max, ReduceOp::Max);
    mx = row_max.data<double>();
    double* pred = sums.data<double>();
    double* total = pred + v.outer;
    for (int64_t r = 0; r < v.outer; ++r) {
      const T* row = x + r * v.classes;
      int64_t l = local[size_t(r)];
      pred[r] = l >= 0 ? double(row[l]) - mx[r] : 0.0;
      total[r] = laneSum(v.classes, [&](int64_t k) { return std::exp(double(row[k]) - mx[r]); });
    }
    c.ring->allReduce(sums, ReduceOp::Sum);
    pred = sums.data<double>();
    total = pred + v.outer;
    T* sm = softmax.data<T>();
    T* ls = loss.data<T>();
    for (int64_t r = 0; r < v.outer; ++r) {
      const T* row = x + r * v.classes;
      double log_sum = std::log(total[r]);
      for (int64_t k = 0; k < v.classes; ++k) sm[r * v.classes + k] = T(std::exp(double(row[k]) - mx[r] - log_sum));
      ls[r] = local[size_t(r)] == -2 ? T(0) : T(log_sum - pred[r]);
    }
  });
}

// c_softmax_with_cross_entropy_grad (local): Logits@GRAD = (Softmax - onehot(the label, where
// this shard holds it)) x Loss@GRAD, zero rows where the label is ignore_index.
void shardSoftmaxCrossEntropyGrad(KernelContext& c) {
  const Tensor& softmax = requireInput(c, "Softmax");
  const Tensor& label = requireInput(c, "Label");
  const Tensor& dloss = requireInput(c, "Loss@GRAD");
  Tensor& dx = requireOutput(c, "Logits@GRAD");
  requireIds(c, "Label", label);
  requireSameStorage(c, "Loss@GRAD", dloss, "Softmax", softmax);
  requireSameStorage(c, "Logits@GRAD", dx, "Softmax", softmax);
  ClassShard s = classShard(c, softmax.shape());
  const ClassView& v = s.v;
  requireShape(c, "Logits@GRAD", dx, softmax.shape(), "Softmax's shape");
  if (dloss.numel() != v.outer) requireShape(c, "Loss@GRAD", dloss, v.reduced, "Softmax's shape with the class axis 1");
  if (label.numel() != v.outer) requireShape(c, "Label", label, v.reduced, "Softmax's shape with the class axis 1");
  int64_t ignore = intAttr(c, "ignore_index", -100);
  dispatchFloat(c, "Softmax", softmax, [&](auto tag) {
    using T = decltype(tag);
    const T* sm = softmax.data<T>();
    const T* gl = dloss.data<T>();
    T* d = dx.data<T>();
    for (int64_t r = 0; r < v.outer; ++r) {
      int64_t l = shardLabel(c, label, r, s, ignore);
      T scale = l == -2 ? T(0) : gl[r];
      for (int64_t k = 0; k < v.classes; ++k) {
        int64_t at = r * v.classes + k;
        d[at] = (sm[at] - (k == l ? T(1) : T(0))) * scale;
      }
    }
  });
}

}  // namespace

void registerVocabParallelKernels(KernelTable& t) {
  t.add("c_embedding", shardEmbedding);
  t.add("c_embedding_grad", shardEmbeddingGrad);
  t.add("c_softmax_with_cross_entropy", shardSoftmaxCrossEntropy);
  t.add("c_softmax_with_cross_entropy_grad", shardSoftmaxCrossEntropyGrad);
}

}  // namespace spopt::rt
