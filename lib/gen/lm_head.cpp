// Vocab-parallel embedding, LM head and cross-entropy (see lm_head.h).
#include "gen/lm_head.h"

namespace spopt::gen {

LanguageModelEnds::LanguageModelEnds(ProgramBuilder& b, const GenOptions& o, TensorParallel& tp)
    : b_(b), o_(o), tp_(tp), vocab_shard_(o.vocabSize() / o.tp) {}

Tensor LanguageModelEnds::embed() {
  const int64_t S = o_.seq, batch = o_.batch / o_.dp, H = o_.hidden;
  ids_ = b_.declare("input_ids", {S, batch}, {Axis::Rep, Axis::Dp}, DType::Int64);
  labels_ = b_.declare("labels", {S, batch, 1}, {Axis::Rep, Axis::Dp, Axis::Rep}, DType::Int64);
  b_.setScope("/embedding/");
  std::string name = b_.names().unique("embedding");
  table_ = parameter(b_, name + ".w_0", {vocab_shard_, H}, {Axis::Mp, Axis::Rep}, o_.computeType());
  emb_partial_ = b_.declare(name + ".tmp_0", {S, batch, H}, {Axis::Rep, Axis::Dp, Axis::Rep}, o_.computeType());
  if (o_.tp == 1) {
    b_.op("lookup_table_v2").in("Ids", ids_).in("W", table_).out("Out", emb_partial_).integer("padding_idx", -1).flag("is_sparse", false);
  } else {
    b_.op("c_embedding")
        .in("W", table_)
        .in("Ids", ids_)
        .out("Out", emb_partial_)
        .integer("start_index", tp_.tpIndex() * vocab_shard_)
        .integer("vocab_size", o_.vocabSize());
  }
  // Each rank's rows are a partial sum of the whole table's lookup: a row-parallel output.
  emb_out_ = tp_.rowOutput(emb_partial_);
  return emb_out_;
}

void LanguageModelEnds::crossEntropy(bool grad, const Tensor* dloss) {
  auto& op = grad ? b_.op(o_.tp == 1 ? "softmax_with_cross_entropy_grad" : "c_softmax_with_cross_entropy_grad")
                        .in("Softmax", softmax_)
                        .in("Label", labels_)
                        .in("Loss@GRAD", *dloss)
                        .out("Logits@GRAD", dlogits_)
                  : b_.op(o_.tp == 1 ? "softmax_with_cross_entropy" : "c_softmax_with_cross_entropy")
                        .in("Logits", head_.out)
                        .in("Label", labels_)
                        .out("Softmax", softmax_)
                        .out("Loss", token_loss_);
  if (o_.tp == 1) {
    op.flag("soft_label", false).flag("use_softmax", true).flag("numeric_stable_mode", true).integer("ignore_index", -100).integer("axis", -1);
  } else {
    op.integer("ignore_index", -100).integer("ring_id", tp_.tpRing()).integer("rank", tp_.tpIndex()).integer("nranks", o_.tp);
  }
}

void LanguageModelEnds::head(const Tensor& final) {
  b_.setScope("/lm_head/");
  final_ = final;
  column_ = tp_.columnInput(final);
  head_ = linear(b_, column_, {Axis::Rep, Axis::Mp}, o_.hidden, vocab_shard_);
  std::string name = b_.names().unique(o_.tp == 1 ? "softmax_with_cross_entropy" : "c_softmax_with_cross_entropy");
  softmax_ = b_.declare(name + ".tmp_0", head_.out.shape, head_.out.axes, o_.computeType());
  std::vector<int64_t> rows = head_.out.shape;
  rows.back() = 1;
  std::vector<Axis> rows_axes = head_.out.axes;
  rows_axes.back() = Axis::Rep;
  token_loss_ = b_.declare(name + ".tmp_1", rows, rows_axes, o_.computeType());
  crossEntropy(false, nullptr);
  loss_ = lossOf(b_, token_loss_);
}

Tensor LanguageModelEnds::headGrad() {
  Tensor dloss = lossGrad(b_, token_loss_, loss_);
  b_.setScope("/lm_head/");
  dlogits_ = b_.grad(head_.out);
  crossEntropy(true, &dloss);
  Tensor dcolumn = tp_.columnInputGradTarget(final_, column_);
  dhead_ = b_.grad(head_.w);
  matmulGrad(b_, column_, head_.w, dlogits_, false, &dcolumn, &dhead_);
  return tp_.columnInputGrad(final_, dcolumn);
}

void LanguageModelEnds::embedGrad(const Tensor& dout) {
  b_.setScope("/embedding/");
  Tensor dpartial = tp_.rowOutputGrad(emb_partial_, dout);
  dtable_ = b_.grad(table_);
  if (o_.tp == 1) {
    b_.op("lookup_table_v2_grad")
        .in("Ids", ids_)
        .in("W", table_)
        .in("Out@GRAD", dpartial)
        .out("W@GRAD", dtable_)
        .integer("padding_idx", -1)
        .flag("is_sparse", false);
  } else {
    b_.op("c_embedding_grad")
        .in("W", table_)
        .in("Ids", ids_)
        .in("Out@GRAD", dpartial)
        .out("W@GRAD", dtable_)
        .integer("start_index", tp_.tpIndex() * vocab_shard_);
  }
}

void LanguageModelEnds::setGrads(Trainables& t) const {
  t.setGrad(table_, dtable_);
  t.setGrad(head_.w, dhead_);
}

}  // namespace spopt::gen
