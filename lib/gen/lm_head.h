#pragma once
// The language-model ends of gpt (with --vocab) and llama, sharded as Megatron-LM shards them
// under tensor parallelism: a vocab-parallel embedding (each rank holds rows [t V/T, (t+1) V/T)
// of the table; c_embedding gives zero rows for the other ids and the partial sums meet in the
// row-output collective: all-reduce, or all-reduce + reshard split with sequence parallelism),
// and an untied column-parallel LM head [H, V/T] whose logits go straight into the vocab-parallel
// cross-entropy (c_softmax_with_cross_entropy, which all-reduces over the tensor-parallel ring
// inside). With T = 1: lookup_table_v2 and softmax_with_cross_entropy.
//
// Token ids `input_ids` [S, b] and `labels` [S, b, 1] are int64 program inputs with the same names
// and global shapes in every layout (sliced over "dp" on the batch dim, never over the sequence:
// the embedding reads the whole sequence, as Megatron's does). The fetched loss is the reduce_sum
// of the token losses the rank computed: the whole batch shard's, identical across the
// tensor-parallel ring (the head reads the gathered sequence).
#include "gen/nn.h"
#include "gen/tensor_parallel.h"
#include "gen/training.h"

namespace spopt::gen {

class LanguageModelEnds {
 public:
  LanguageModelEnds(ProgramBuilder& b, const GenOptions& o, TensorParallel& tp);

  // Declares the ids and labels; emits the embedding: returns the activation [s, b, H].
  Tensor embed();
  // The head, the cross-entropy and the fetched reduce_sum over `final` (the final norm's output).
  void head(const Tensor& final);
  // Backward seed through the loss and the head: returns final@GRAD.
  Tensor headGrad();
  // From the embedding output's gradient to the table's.
  void embedGrad(const Tensor& dout);
  // The embedding table first, the head last (call after the layers' parameters).
  void addEmbedding(Trainables& t) const { t.add(table_); }
  void addHead(Trainables& t) const { t.add(head_.w); }
  void setGrads(Trainables& t) const;

 private:
  void crossEntropy(bool grad, const Tensor* dloss);

  ProgramBuilder& b_;
  const GenOptions& o_;
  TensorParallel& tp_;
  int64_t vocab_shard_;
  Tensor ids_, labels_, table_, emb_partial_, emb_out_, dtable_;
  Tensor final_, column_, softmax_, token_loss_, loss_, dlogits_, dhead_;
  Linear head_;
};

}  // namespace spopt::gen
