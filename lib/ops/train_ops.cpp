// What a language-model training step adds to the compute ops: the embedding lookup, the
// softmax cross-entropy loss, their vocab-parallel forms (Megatron's VocabParallelEmbedding and
// _VocabParallelCrossEntropy: c_embedding, c_softmax_with_cross_entropy) and the Adam / AdamW
// updates. Definitions and their rules.
#include "ops/rule_support.h"

namespace spopt::ops {
namespace {

bool isIndexType(const Var* v) { return v && (v->dtype == DType::Int64 || v->dtype == DType::Int32); }

// lookup_table_v2: W is [rows, width], Ids are integers, Out is Ids' dims + [width].
Result checkEmbedding(const OpView& op, bool grad) {
  const Var *ids = op.in("Ids"), *w = op.in("W");
  if (ids && !isIndexType(ids)) return fail(op, "/inputs/Ids/0", "Ids " + typeText(*ids) + " should be int64 or int32");
  if (auto e = requireFloat(op, "W", w)) return e;
  if (!known(w)) return std::nullopt;
  if (w->shape.size() != 2) return fail(op, "/inputs/W/0", "W " + typeText(*w) + " should be 2-D [rows, width]");
  if (grad) {
    if (auto e = requireSameStorage(op, "/outputs", "W@GRAD", op.out("W@GRAD"), "W", w)) return e;
    if (auto e = requireDims(op, "/outputs", "W@GRAD", op.out("W@GRAD"), w->shape, "W's shape")) return e;
  } else if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "W", w)) {
    return e;
  }
  if (!known(ids)) return std::nullopt;
  ShapeDims out = ids->shape;
  out.push_back(w->shape[1]);
  return grad ? requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), out, "Ids' dims + [W's width]")
              : requireDims(op, "/outputs", "Out", op.out("Out"), out, "Ids' dims + [W's width]");
}
Result ruleEmbedding(const OpView& op) { return checkEmbedding(op, false); }
Result ruleEmbeddingGrad(const OpView& op) { return checkEmbedding(op, true); }

// softmax_with_cross_entropy (hard labels): Softmax is Logits' shape, Label and Loss are Logits'
// shape with the class axis of size 1.
Result ruleSoftmaxCrossEntropy(const OpView& op) {
  const Var *logits = op.in("Logits"), *label = op.in("Label");
  if (auto e = requireFloat(op, "Logits", logits)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Softmax", op.out("Softmax"), "Logits", logits)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Loss", op.out("Loss"), "Logits", logits)) return e;
  if (!known(logits) || logits->shape.empty()) return std::nullopt;
  auto axis = intAttr(op, "axis", -1);
  int64_t rank = int64_t(logits->shape.size());
  if (!axis) return std::nullopt;
  if (*axis < -rank || *axis >= rank)
    return fail(op, "/attrs/axis", "axis " + std::to_string(*axis) + " is out of range for rank " + std::to_string(rank));
  ShapeDims reduced = logits->shape;
  reduced[size_t(*axis < 0 ? *axis + rank : *axis)] = 1;
  if (auto e = requireDims(op, "/outputs", "Softmax", op.out("Softmax"), logits->shape, "Logits' shape")) return e;
  if (auto e = requireDims(op, "/outputs", "Loss", op.out("Loss"), reduced, "Logits' shape with the class axis 1")) return e;
  if (boolAttr(op, "soft_label", false).value_or(false)) return std::nullopt;
  if (label && !isIndexType(label)) return fail(op, "/inputs/Label/0", "Label " + typeText(*label) + " should be int64 or int32 (hard labels)");
  return requireDims(op, "/inputs", "Label", label, reduced, "Logits' shape with the class axis 1");
}

Result ruleSoftmaxCrossEntropyGrad(const OpView& op) {
  const Var* softmax = op.in("Softmax");
  if (auto e = requireFloat(op, "Softmax", softmax)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Logits@GRAD", op.out("Logits@GRAD"), "Softmax", softmax)) return e;
  if (!known(softmax)) return std::nullopt;
  return requireDims(op, "/outputs", "Logits@GRAD", op.out("Logits@GRAD"), softmax->shape, "Softmax's shape");
}

// adam: Grad, the moments and the outputs are stored and shaped like Param; the learning rate and
// the decay powers hold one value.
Result ruleAdam(const OpView& op) {
  const Var* param = op.in("Param");
  if (auto e = requireFloat(op, "Param", param)) return e;
  for (const char* in : {"Grad", "Moment1", "Moment2"}) {
    if (auto e = requireSameStorage(op, "/inputs", in, op.in(in), "Param", param)) return e;
    if (known(param))
      if (auto e = requireDims(op, "/inputs", in, op.in(in), param->shape, "Param's shape")) return e;
  }
  for (const char* out : {"ParamOut", "Moment1Out", "Moment2Out"}) {
    if (auto e = requireSameStorage(op, "/outputs", out, op.out(out), "Param", param)) return e;
    if (known(param))
      if (auto e = requireDims(op, "/outputs", out, op.out(out), param->shape, "Param's shape")) return e;
  }
  for (const char* in : {"LearningRate", "Beta1Pow", "Beta2Pow"})
    if (const Var* v = op.in(in); known(v) && v->numel() != 1)
      return fail(op, std::string("/inputs/") + in + "/0", std::string(in) + " " + dimsText(v->shape) + " should hold one element");
  return std::nullopt;
}

// c_embedding: lookup_table_v2's shapes, and a shard that starts at a non-negative row.
Result checkShardEmbedding(const OpView& op, bool grad) {
  if (auto start = intAttr(op, "start_index", 0); start && *start < 0)
    return fail(op, "/attrs/start_index", "start_index " + std::to_string(*start) + " should be >= 0");
  return checkEmbedding(op, grad);
}
Result ruleShardEmbedding(const OpView& op) { return checkShardEmbedding(op, false); }
Result ruleShardEmbeddingGrad(const OpView& op) { return checkShardEmbedding(op, true); }

// c_softmax_with_cross_entropy(_grad): the shard's class offset is rank x classes, so `rank` must be
// this program's position in the ring and `nranks` its size (when the job declares the ring).
Result checkShardAttrs(const OpView& op) {
  auto rank = intAttr(op, "rank", 0), nranks = intAttr(op, "nranks", 0);
  if (!rank || !nranks) return std::nullopt;  // the kind check reports a non-integer
  const Program* p = op.op().block ? op.op().block->program : nullptr;
  auto ring = intAttr(op, "ring_id", 0);
  const ProcessGroup* g = p && p->job && ring ? p->job->group(*ring) : nullptr;
  if (!g) {
    if (*nranks > 0 && (*rank < 0 || *rank >= *nranks))
      return fail(op, "/attrs/rank", "rank " + std::to_string(*rank) + " is not a position among nranks " + std::to_string(*nranks));
    return std::nullopt;
  }
  int64_t size = int64_t(g->ranks.size()), at = g->positionOf(p->rank);
  if (*nranks != size)
    return fail(op, "/attrs/nranks", "nranks " + std::to_string(*nranks) + " differs from ring " + std::to_string(*ring) + "'s size " + std::to_string(size));
  if (at >= 0 && *rank != at)
    return fail(op, "/attrs/rank", "rank " + std::to_string(*rank) + " differs from rank " + std::to_string(p->rank) + "'s position " +
                                       std::to_string(at) + " in ring " + std::to_string(*ring));
  return std::nullopt;
}
Result ruleShardSoftmaxCrossEntropy(const OpView& op) {
  if (auto e = checkShardAttrs(op)) return e;
  return ruleSoftmaxCrossEntropy(op);
}
Result ruleShardSoftmaxCrossEntropyGrad(const OpView& op) {
  if (auto e = checkShardAttrs(op)) return e;
  return ruleSoftmaxCrossEntropyGrad(op);
}

// Global ids: c_embedding's vocab_size (Paddle's VocabParallelEmbedding passes the whole vocab), the
// shard's classes times nranks for the vocab-parallel loss.
std::optional<int64_t> globalVocab(const OpView& op) {
  auto v = intAttr(op, "vocab_size", -1);
  return v && *v > 0 ? v : std::nullopt;
}
std::optional<int64_t> globalClasses(const OpView& op, std::string_view logits_slot) {
  const Var* x = op.in(logits_slot);
  auto n = intAttr(op, "nranks", 0);
  if (!known(x) || x->shape.empty() || !n || *n <= 0) return std::nullopt;
  return x->shape.back() * *n;
}
std::optional<int64_t> globalClassesOfLogits(const OpView& op) { return globalClasses(op, "Logits"); }
std::optional<int64_t> globalClassesOfSoftmax(const OpView& op) { return globalClasses(op, "Softmax"); }

// The row max, the predicted logit and the exp-sum of every row, in double.
std::optional<int64_t> ringPayloadSoftmaxCrossEntropy(const OpView& op) {
  const Var* x = op.in("Logits");
  if (!known(x) || x->shape.empty() || x->shape.back() <= 0) return std::nullopt;
  return 3 * int64_t(sizeof(double)) * (x->numel() / x->shape.back());
}

double flopsSoftmaxCrossEntropy(const OpView& op) {
  const Var* x = op.in("Logits");
  int64_t n = x ? x->numel() : 0;
  return n > 0 ? 6.0 * double(n) : 0;  // max, exp, sum, divide, log: about as softmax
}

}  // namespace

void addTrainOps(std::vector<OpDef>& d) {
  // Ids index W's rows; a row equal to padding_idx reads as zeros and gets no gradient.
  OperandDef ids{"Ids", {}, 0, true};
  ids.index_of = "W";
  std::vector<AttrDef> embedding_attrs = {{"padding_idx", AttrKind::Int}, {"is_sparse", AttrKind::Bool, "sparse"}};
  d.push_back({.name = "embedding", .spellings = {legacyName("lookup_table_v2"), pirName("pd_op.embedding")},
               .inputs = {ids, {"W", {}, 1, true}}, .outputs = {{"Out", {}, 0, true}}, .attrs = embedding_attrs,
               .traits = trait::Recomputable | trait::MovesOnly, .rule = ruleEmbedding, .grad = "embedding_grad"});
  // Only W's shape is read: the gradient is a scatter-add of Out@GRAD's rows.
  d.push_back({.name = "embedding_grad", .spellings = {legacyName("lookup_table_v2_grad"), pirName("pd_op.embedding_grad")},
               .inputs = {ids, {"W", {}, 1, true, false}, {"Out@GRAD", {}, 2, true}}, .outputs = {{"W@GRAD", {}, 0, true}},
               .attrs = embedding_attrs, .traits = trait::Grad, .rule = ruleEmbeddingGrad, .cost = {1, "Out@GRAD", true}});

  OperandDef label{"Label", {}, 1, true};
  label.index_of = "Logits";
  label.index_dim = -1;
  std::vector<AttrDef> ce_attrs = {{"soft_label", AttrKind::Bool}, {"use_softmax", AttrKind::Bool},
                                   {"numeric_stable_mode", AttrKind::Bool}, {"ignore_index", AttrKind::Int},
                                   {"axis", AttrKind::Int}};
  d.push_back({.name = "cross_entropy_with_softmax",
               .spellings = {legacyName("softmax_with_cross_entropy"), pirName("pd_op.cross_entropy_with_softmax")},
               .inputs = {{"Logits", {}, 0, true}, label}, .outputs = {{"Softmax", {}, 0, true}, {"Loss", {}, 1, true}},
               .attrs = ce_attrs, .traits = trait::Recomputable, .rule = ruleSoftmaxCrossEntropy,
               .cost = {.flops = flopsSoftmaxCrossEntropy}, .grad = "cross_entropy_with_softmax_grad"});
  OperandDef grad_label = label;
  grad_label.index_of = "Softmax";
  grad_label.pir = 0;
  d.push_back({.name = "cross_entropy_with_softmax_grad",
               .spellings = {legacyName("softmax_with_cross_entropy_grad"), pirName("pd_op.cross_entropy_with_softmax_grad")},
               .inputs = {grad_label, {"Softmax", {}, 1, true}, {"Loss@GRAD", {}, 2, true}},
               .outputs = {{"Logits@GRAD", {}, 0, true}}, .attrs = ce_attrs, .traits = trait::Grad,
               .rule = ruleSoftmaxCrossEntropyGrad, .cost = {2, "Logits@GRAD"}});

  // Paddle's adam_ (ops.yaml): param, grad, learning_rate, moment1, moment2, moment2_max, beta1_pow,
  // beta2_pow, master_param, skip_update; beta1, beta2 and epsilon are Scalars.
  OperandDef moment2{"Moment2", {}, 4, true}, beta1_pow{"Beta1Pow", {}, 6, true}, beta2_pow{"Beta2Pow", {}, 7, true};
  moment2.non_negative = beta1_pow.non_negative = beta2_pow.non_negative = true;
  d.push_back({.name = "adam", .spellings = {legacyName("adam"), pirName("pd_op.adam_", true)},
               .inputs = {{"Param", {}, 0, true}, {"Grad", {}, 1, true}, {"LearningRate", {}, 2, true}, {"Moment1", {}, 3, true},
                          moment2, beta1_pow, beta2_pow, {"MasterParam", {}, 8}, {"SkipUpdate", {}, 9},
                          {"Beta1Tensor"}, {"Beta2Tensor"}, {"EpsilonTensor"}},
               .outputs = {{"ParamOut", {}, 0, true}, {"Moment1Out", {}, 1, true}, {"Moment2Out", {}, 2, true},
                           {"Beta1PowOut", {}, 4}, {"Beta2PowOut", {}, 5}, {"MasterParamOut", {}, 6}},
               .attrs = {{"beta1", AttrKind::Float, {}, 10}, {"beta2", AttrKind::Float, {}, 11}, {"epsilon", AttrKind::Float, {}, 12},
                         {"lazy_mode", AttrKind::Bool}, {"multi_precision", AttrKind::Bool}, {"use_global_beta_pow", AttrKind::Bool}},
               .traits = trait::InPlace, .rule = ruleAdam, .cost = {10, "Param", true}});
  // adamw_ (ops.yaml): adam_'s operands, then lr_ratio, coeff and with_decay (decoupled decay).
  OpDef adamw = d.back();
  adamw.name = "adamw";
  adamw.spellings = {legacyName("adamw"), pirName("pd_op.adamw_", true)};
  adamw.attrs.insert(adamw.attrs.begin() + 3, {{"lr_ratio", AttrKind::Float}, {"coeff", AttrKind::Float}, {"with_decay", AttrKind::Bool}});
  adamw.cost = {12, "Param", true};
  d.push_back(std::move(adamw));

  // Vocab-parallel embedding: this rank holds rows [start_index, start_index + rows) of the table;
  // other ids read as zero rows (an all-reduce over the ring follows in the program). PIR:
  // c_embedding(weight, x, start_index, vocab_size), c_embedding_grad(weight, x, out_grad, start_index).
  OperandDef shard_ids{"Ids", {}, 1, true};
  shard_ids.index_of = "W";
  shard_ids.index_bound = globalVocab;
  std::vector<AttrDef> shard_attrs = {{"start_index", AttrKind::Int}, {"vocab_size", AttrKind::Int}};
  d.push_back({.name = "c_embedding", .spellings = {legacyName("c_embedding"), pirName("pd_op.c_embedding")},
               .inputs = {{"W", {}, 0, true}, shard_ids}, .outputs = {{"Out", {}, 0, true}}, .attrs = shard_attrs,
               .traits = trait::Recomputable | trait::MovesOnly, .rule = ruleShardEmbedding, .grad = "c_embedding_grad"});
  d.push_back({.name = "c_embedding_grad", .spellings = {legacyName("c_embedding_grad"), pirName("pd_op.c_embedding_grad")},
               .inputs = {{"W", {}, 0, true, false}, shard_ids, {"Out@GRAD", {}, 2, true}}, .outputs = {{"W@GRAD", {}, 0, true}},
               .attrs = shard_attrs, .traits = trait::Grad, .rule = ruleShardEmbeddingGrad, .cost = {1, "Out@GRAD", true}});

  // Vocab-parallel softmax cross-entropy: Logits hold classes [rank x C, (rank + 1) x C) of the
  // ring's nranks x C; the kernel all-reduces the row max and the two row sums over ring_id
  // (CollectiveKind::KernelAllReduce), so the op takes part in that ring where it stands.
  // PIR: c_softmax_with_cross_entropy(logits, label, ignore_index, ring_id, rank, nranks).
  OperandDef shard_label{"Label", {}, 1, true};
  shard_label.index_of = "Logits";
  shard_label.index_dim = -1;
  shard_label.index_bound = globalClassesOfLogits;
  std::vector<AttrDef> shard_ce_attrs = {{"ignore_index", AttrKind::Int}, {"ring_id", AttrKind::Int}, {"rank", AttrKind::Int},
                                         {"nranks", AttrKind::Int}};
  d.push_back({.name = "c_softmax_with_cross_entropy",
               .spellings = {legacyName("c_softmax_with_cross_entropy"), pirName("pd_op.c_softmax_with_cross_entropy")},
               .inputs = {{"Logits", {}, 0, true}, shard_label}, .outputs = {{"Softmax", {}, 0, true}, {"Loss", {}, 1, true}},
               .attrs = shard_ce_attrs, .traits = trait::SideEffects, .rule = ruleShardSoftmaxCrossEntropy,
               .cost = {.flops = flopsSoftmaxCrossEntropy, .ring_payload = ringPayloadSoftmaxCrossEntropy},
               .grad = "c_softmax_with_cross_entropy_grad", .collective = CollectiveKind::KernelAllReduce});
  // Local: softmax minus the one-hot of the labels this shard holds. Paddle writes it in place of
  // Softmax (pd_op.c_softmax_with_cross_entropy_grad_).
  OperandDef grad_shard_label = shard_label;
  grad_shard_label.index_of = "Softmax";
  grad_shard_label.index_bound = globalClassesOfSoftmax;
  d.push_back({.name = "c_softmax_with_cross_entropy_grad",
               .spellings = {legacyName("c_softmax_with_cross_entropy_grad"), pirName("pd_op.c_softmax_with_cross_entropy_grad"),
                             pirName("pd_op.c_softmax_with_cross_entropy_grad_", true)},
               .inputs = {{"Softmax", {}, 0, true}, grad_shard_label, {"Loss@GRAD", {}, 2, true}},
               .outputs = {{"Logits@GRAD", {}, 0, true}}, .attrs = shard_ce_attrs, .traits = trait::Grad,
               .rule = ruleShardSoftmaxCrossEntropyGrad, .cost = {2, "Logits@GRAD"}});
}

}  // namespace spopt::ops
