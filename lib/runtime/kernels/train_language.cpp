// The kernels of a language-model training step beyond the compute ops: lookup_table_v2 and its
// gradient, softmax_with_cross_entropy (hard labels) and its gradient, and the Adam and AdamW
// updates (one kernel body: AdamW is Adam after a decoupled weight decay).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"
#include "runtime/kernels/softmax_row.h"
#include "runtime/kernels/train_language.h"

namespace spopt::rt {
Lookup lookupOf(const KernelContext& c) {
  const Tensor& ids = requireInput(c, "Ids");
  const Tensor& w = requireInput(c, "W");
  Tensor& out = requireOutput(c, "Out");
  requireIds(c, "Ids", ids);
  requireSameStorage(c, "Out", out, "W", w);
  Table t = tableOf(c, w);
  requireShape(c, "Out", out, lookupShape(ids, t), "Ids' dims + [W's width]");
  return {ids, w, out, t};
}

LookupGrad lookupGradOf(const KernelContext& c) {
  const Tensor& ids = requireInput(c, "Ids");
  const Tensor& w = requireInput(c, "W");  // its shape only
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dw = requireOutput(c, "W@GRAD");
  requireIds(c, "Ids", ids);
  requireSameStorage(c, "W@GRAD", dw, "W", w);
  requireSameStorage(c, "Out@GRAD", g, "W", w);
  Table t = tableOf(c, w);
  requireShape(c, "W@GRAD", dw, w.shape(), "W's shape");
  requireShape(c, "Out@GRAD", g, lookupShape(ids, t), "Ids' dims + [W's width]");
  return {ids, w, g, dw, t};
}

void sumRowsOfPositions(const KernelContext& c, const LookupGrad& io, std::vector<std::pair<int64_t, int64_t>> order) {
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const int64_t width = io.t.width;
  dispatchFloat(c, "W", io.w, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = io.g.data<T>();
    T* d = io.dw.data<T>();
    std::fill(d, d + io.dw.numel(), T(0));
    std::vector<double> acc(static_cast<size_t>(width));
    for (size_t k = 0; k < order.size();) {
      int64_t r = order[k].first;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (; k < order.size() && order[k].first == r; ++k) {
        const T* row = gp + order[k].second * width;
        for (int64_t j = 0; j < width; ++j) acc[size_t(j)] += double(row[j]);
      }
      for (int64_t j = 0; j < width; ++j) d[r * width + j] = T(acc[size_t(j)]);
    }
  });
}

namespace {

// The id at position i, checked against the table: kNoPadding-aware callers skip padding rows.
int64_t checkedId(const KernelContext& c, const Tensor& ids, int64_t i, const Table& t) {
  int64_t id = idAt(ids, i);
  if (id < 0 || id >= t.rows)
    kernelFail(c, "Ids[" + std::to_string(i) + "] = " + std::to_string(id) + " is outside W's " + std::to_string(t.rows) + " rows");
  return id;
}

// lookup_table_v2: Out[i] = W[Ids[i]], zeros where Ids[i] == padding_idx.
void embedding(KernelContext& c) {
  const Lookup io = lookupOf(c);
  int64_t padding = intAttr(c, "padding_idx", kNoPadding);
  copyRows(c, io, [&](int64_t i) {
    return padding != kNoPadding && idAt(io.ids, i) == padding ? int64_t(-1) : checkedId(c, io.ids, i, io.t);
  });
}

// lookup_table_v2_grad: W@GRAD[r] = sum of Out@GRAD[i] over Ids[i] == r (none for padding_idx).
void embeddingGrad(KernelContext& c) {
  LookupGrad io = lookupGradOf(c);
  int64_t padding = intAttr(c, "padding_idx", kNoPadding);
  std::vector<std::pair<int64_t, int64_t>> rows_positions;
  rows_positions.reserve(size_t(io.ids.numel()));
  for (int64_t i = 0, n = io.ids.numel(); i < n; ++i)
    if (int64_t id = checkedId(c, io.ids, i, io.t); padding == kNoPadding || id != padding) rows_positions.emplace_back(id, i);
  sumRowsOfPositions(c, io, std::move(rows_positions));
}

void requireHardLabels(const KernelContext& c) {
  if (boolAttr(c, "soft_label", false)) kernelFail(c, "soft_label=true is not supported (hard labels only)");
  if (!boolAttr(c, "use_softmax", true)) kernelFail(c, "use_softmax=false is not supported");
}

// The class of position (o, i), or -1 when it is ignore_index; fails outside [0, classes).
int64_t labelAt(const KernelContext& c, const Tensor& label, int64_t at, const ClassView& v, int64_t ignore) {
  int64_t l = idAt(label, at);
  if (l == ignore) return -1;
  if (l < 0 || l >= v.classes)
    kernelFail(c, "Label[" + std::to_string(at) + "] = " + std::to_string(l) + " is outside the " + std::to_string(v.classes) + " classes");
  return l;
}

// softmax_with_cross_entropy: Softmax = softmax(Logits) over the axis (softmax_row.h: shifted by
// the max, fastExp for float32, the sum in the logits' type), Loss = log(sum) - (x[label] - max),
// 0 where the label is ignore_index. The loss is taken in double from that sum and rounded once:
// one log per row costs nothing beside the row, and a float32 log would add its own error.
void softmaxCrossEntropy(KernelContext& c) {
  const Tensor& logits = requireInput(c, "Logits");
  const Tensor& label = requireInput(c, "Label");
  Tensor& softmax = requireOutput(c, "Softmax");
  Tensor& loss = requireOutput(c, "Loss");
  requireHardLabels(c);
  requireIds(c, "Label", label);
  requireSameStorage(c, "Softmax", softmax, "Logits", logits);
  requireSameStorage(c, "Loss", loss, "Logits", logits);
  ClassView v = classView(c, logits.shape());
  requireShape(c, "Softmax", softmax, logits.shape(), "Logits' shape");
  requireShape(c, "Loss", loss, v.reduced, "Logits' shape with the class axis 1");
  if (label.numel() != v.outer * v.inner) requireShape(c, "Label", label, v.reduced, "Logits' shape with the class axis 1");
  if (v.classes < 1) kernelFail(c, "Logits " + shapeStr(logits.shape()) + " has no classes along the axis");
  int64_t ignore = intAttr(c, "ignore_index", -100);
  dispatchFloat(c, "Logits", logits, [&](auto tag) {
    using T = decltype(tag);
    const T* x = logits.data<T>();
    T* sm = softmax.data<T>();
    T* ls = loss.data<T>();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t in = 0; in < v.inner; ++in) {
        int64_t base = o * v.classes * v.inner + in;
        SoftmaxRowStats r = v.inner == 1 ? softmaxRow<T, true>(x + base, sm + base, v.classes, 1)
                                         : softmaxRow<T, false>(x + base, sm + base, v.classes, v.inner);
        int64_t pos = o * v.inner + in;
        int64_t l = labelAt(c, label, pos, v, ignore);
        ls[pos] = l < 0 ? T(0) : T(std::log(r.sum) - (double(x[base + l * v.inner]) - r.max));
      }
  });
}

// softmax_with_cross_entropy_grad: Logits@GRAD = (Softmax - onehot(Label)) * Loss@GRAD, 0 at
// positions whose label is ignore_index.
void softmaxCrossEntropyGrad(KernelContext& c) {
  const Tensor& label = requireInput(c, "Label");
  const Tensor& softmax = requireInput(c, "Softmax");
  const Tensor& dloss = requireInput(c, "Loss@GRAD");
  Tensor& dx = requireOutput(c, "Logits@GRAD");
  requireHardLabels(c);
  requireIds(c, "Label", label);
  requireSameStorage(c, "Loss@GRAD", dloss, "Softmax", softmax);
  requireSameStorage(c, "Logits@GRAD", dx, "Softmax", softmax);
  ClassView v = classView(c, softmax.shape());
  requireShape(c, "Logits@GRAD", dx, softmax.shape(), "Softmax's shape");
  if (dloss.numel() != v.outer * v.inner) requireShape(c, "Loss@GRAD", dloss, v.reduced, "Softmax's shape with the class axis 1");
  if (label.numel() != v.outer * v.inner) requireShape(c, "Label", label, v.reduced, "Softmax's shape with the class axis 1");
  int64_t ignore = intAttr(c, "ignore_index", -100);
  dispatchFloat(c, "Softmax", softmax, [&](auto tag) {
    using T = decltype(tag);
    const T* sm = softmax.data<T>();
    const T* gl = dloss.data<T>();
    T* d = dx.data<T>();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t in = 0; in < v.inner; ++in) {
        int64_t base = o * v.classes * v.inner + in, pos = o * v.inner + in;
        int64_t l = labelAt(c, label, pos, v, ignore);
        T scale = l < 0 ? T(0) : gl[pos];
        if (v.inner == 1) {  // contiguous classes: a loop GCC vectorises; (s - 0) * g is s * g exactly
          const T* s = sm + base;
          T* out = d + base;
          for (int64_t k = 0; k < v.classes; ++k) out[k] = s[k] * scale;
          if (l >= 0) out[l] = (s[l] - T(1)) * scale;
          continue;
        }
        for (int64_t k = 0; k < v.classes; ++k) {
          int64_t at = base + k * v.inner;
          d[at] = (sm[at] - (k == l ? T(1) : T(0))) * scale;
        }
      }
  });
}

// A hyper-parameter: its one-element tensor input when given, else the attribute.
double hyper(const KernelContext& c, std::string_view tensor_slot, std::string_view attr, double def) {
  if (const Tensor* t = optionalInput(c, tensor_slot)) {
    if (t->numel() != 1) kernelFail(c, std::string(tensor_slot) + " " + shapeStr(t->shape()) + " should hold one element");
    return scalarAt(*t);
  }
  return floatAttr(c, attr, def);
}

const Tensor& requireOne(const KernelContext& c, std::string_view slot) {
  const Tensor& t = requireInput(c, slot);
  if (t.numel() != 1) kernelFail(c, std::string(slot) + " " + shapeStr(t.shape()) + " should hold one element");
  return t;
}

// adam, as Paddle's dense CPU kernel computes it (in the parameter's type):
//   lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
//   m1' = beta1 m1 + (1 - beta1) g;  m2' = beta2 m2 + (1 - beta2) g g
//   p' = p - lr_t * m1' / (sqrt(m2') + eps * sqrt(1 - beta2_pow))
//   beta1_pow' = beta1 * beta1_pow, beta2_pow' likewise (kept when use_global_beta_pow)
// A true SkipUpdate copies every state through unchanged.
// AdamW (Paddle's adamw kernel) first decays the parameter, p *= 1 - lr x lr_ratio x coeff, and
// runs the update above with lr x lr_ratio; coeff counts only with with_decay. Adam is lr_ratio 1,
// coeff 0 (the decay step is then skipped, so its bits are Adam's own).
struct Decay {
  double lr_ratio = 1, coeff = 0;
};

// The element loop, its pointers restrict-qualified: the outputs are the executor's fresh buffers,
// and without the promise GCC needs 12 overlap checks, more than it versions a loop for, and
// leaves the loop scalar (a divide and a square root per element: 3x the memory bound).
template <typename T> struct AdamStep {
  T b1, b2, rate, eps_hat, keep;
  bool decays;
  void run(int64_t n, const T* __restrict p, const T* __restrict g, const T* __restrict a, const T* __restrict b,
           T* __restrict po, T* __restrict ao, T* __restrict bo) const {
    for (int64_t i = 0; i < n; ++i) {
      T mom1 = b1 * a[i] + (T(1) - b1) * g[i];
      T mom2 = b2 * b[i] + (T(1) - b2) * g[i] * g[i];
      ao[i] = mom1;
      bo[i] = mom2;
      T pi = decays ? p[i] * keep : p[i];
      po[i] = pi - rate * (mom1 / (std::sqrt(mom2) + eps_hat));
    }
  }
};

void adamUpdate(KernelContext& c, Decay decay) {
  const Tensor& param = requireInput(c, "Param");
  const Tensor& grad = requireInput(c, "Grad");
  const Tensor& m1 = requireInput(c, "Moment1");
  const Tensor& m2 = requireInput(c, "Moment2");
  const Tensor& lr = requireOne(c, "LearningRate");
  const Tensor& b1p = requireOne(c, "Beta1Pow");
  const Tensor& b2p = requireOne(c, "Beta2Pow");
  Tensor& p_out = requireOutput(c, "ParamOut");
  Tensor& m1_out = requireOutput(c, "Moment1Out");
  Tensor& m2_out = requireOutput(c, "Moment2Out");
  Tensor* b1p_out = optionalOutput(c, "Beta1PowOut");
  Tensor* b2p_out = optionalOutput(c, "Beta2PowOut");
  requireFloat(c, "Param", param);
  if (boolAttr(c, "multi_precision", false) && optionalInput(c, "MasterParam"))
    kernelFail(c, "multi_precision with a MasterParam is not supported");
  for (auto [name, t] : {std::pair{"Grad", &grad}, {"Moment1", &m1}, {"Moment2", &m2}}) {
    requireSameStorage(c, name, *t, "Param", param);
    requireSameShape(c, name, *t, "Param", param);
  }
  for (auto [name, t] : {std::pair{"ParamOut", &p_out}, {"Moment1Out", &m1_out}, {"Moment2Out", &m2_out}}) {
    requireSameStorage(c, name, *t, "Param", param);
    requireSameShape(c, name, *t, "Param", param);
  }
  const Tensor* skip = optionalInput(c, "SkipUpdate");
  bool skip_update = skip && skip->numel() > 0 && scalarAt(*skip) != 0;
  bool global_pow = boolAttr(c, "use_global_beta_pow", false);
  double beta1 = hyper(c, "Beta1Tensor", "beta1", 0.9), beta2 = hyper(c, "Beta2Tensor", "beta2", 0.999);
  double eps = hyper(c, "EpsilonTensor", "epsilon", 1e-8);
  auto setPow = [&](Tensor* out, const Tensor& in, double beta) {
    if (!out) return;
    if (out->numel() != 1) kernelFail(c, "a beta pow output " + shapeStr(out->shape()) + " should hold one element");
    dispatchFloat(c, "Beta1Pow", *out, [&](auto tag) {
      using T = decltype(tag);
      T v = T(scalarAt(in));
      out->data<T>()[0] = skip_update || global_pow ? v : T(beta) * v;
    });
  };
  dispatchFloat(c, "Param", param, [&](auto tag) {
    using T = decltype(tag);
    int64_t n = param.numel();
    const T *p = param.data<T>(), *g = grad.data<T>(), *a = m1.data<T>(), *b = m2.data<T>();
    T *po = p_out.data<T>(), *ao = m1_out.data<T>(), *bo = m2_out.data<T>();
    if (skip_update) {
      std::copy(p, p + n, po);
      std::copy(a, a + n, ao);
      std::copy(b, b + n, bo);
      return;
    }
    const T b1 = T(beta1), b2 = T(beta2), e = T(eps);
    const T pow1 = T(scalarAt(b1p)), pow2 = T(scalarAt(b2p));
    T rate = T(scalarAt(lr));
    if (decay.lr_ratio != 1) rate *= T(decay.lr_ratio);
    const bool decays = decay.coeff != 0;
    const T keep = T(1) - rate * T(decay.coeff);
    rate *= std::sqrt(T(1) - pow2) / (T(1) - pow1);
    const T eps_hat = e * std::sqrt(T(1) - pow2);
    AdamStep<T>{b1, b2, rate, eps_hat, keep, decays}.run(n, p, g, a, b, po, ao, bo);
  });
  setPow(b1p_out, b1p, beta1);
  setPow(b2p_out, b2p, beta2);
}

void adam(KernelContext& c) { adamUpdate(c, {}); }

void adamw(KernelContext& c) {
  Decay d{floatAttr(c, "lr_ratio", 1.0), boolAttr(c, "with_decay", false) ? floatAttr(c, "coeff", 0.01) : 0.0};
  if (!std::isfinite(d.lr_ratio) || !std::isfinite(d.coeff)) kernelFail(c, "lr_ratio and coeff must be finite");
  adamUpdate(c, d);
}

}  // namespace

void registerLanguageTrainKernels(KernelTable& t) {
  t.add("embedding", embedding);
  t.add("embedding_grad", embeddingGrad);
  t.add("cross_entropy_with_softmax", softmaxCrossEntropy);
  t.add("cross_entropy_with_softmax_grad", softmaxCrossEntropyGrad);
  t.add("adam", adam);
  t.add("adamw", adamw);
}

}  // namespace spopt::rt
