#pragma once
// What `sp-opt gen` builds: the model, its size, and how it is split over ranks.
#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace spopt::gen {

enum class Model { Mlp, Gpt, Llama };
enum class Optimizer { None, Sgd, AdamW };
enum class Dialect { Legacy, Current };  // c_* collectives with X/Out, or all_* with x/out

struct GenOptions {
  Model model = Model::Mlp;
  int64_t tp = 1;       // tensor-parallel degree T: ranks per tensor-parallel ring
  int64_t dp = 1;       // data-parallel degree D: world = T x D
  int64_t layers = 2;
  int64_t batch = 2;    // global batch, split over the D data-parallel groups
  int64_t seq = 8;
  int64_t hidden = 16;
  int64_t heads = 4;    // gpt and llama
  int64_t ffn = 0;      // 0: 4 x hidden
  // Vocabulary: with V > 0 gpt reads token ids through a (vocab-parallel) embedding and ends in
  // an untied LM head and cross-entropy; 0 keeps the float `input` and reduce_sum loss. llama
  // always has them (0: kLlamaVocab).
  int64_t vocab = 0;
  DType dtype = DType::Float32;
  // --amp bf16: parameters stay `dtype` (float32) masters, cast to bfloat16 where they are
  // declared; activations and gradients are bfloat16; the loss is scaled.
  bool amp = false;
  bool sequence_parallel = false;
  Dialect dialect = Dialect::Legacy;
  bool backward = true;
  Optimizer optimizer = Optimizer::Sgd;  // needs backward unless None
  double dropout = 0.1;

  int64_t ffnSize() const { return ffn > 0 ? ffn : 4 * hidden; }
  static constexpr int64_t kLlamaVocab = 64;
  int64_t vocabSize() const { return vocab > 0 ? vocab : model == Model::Llama ? kLlamaVocab : 0; }
  bool hasLmHead() const { return vocabSize() > 0; }
  DType computeType() const { return amp ? DType::BFloat16 : dtype; }
  bool optimizes() const { return optimizer != Optimizer::None; }
  // Sequence parallelism only exists between tensor-parallel ranks; with T = 1 it is a no-op.
  bool sp() const { return sequence_parallel && tp > 1; }
};

// Throws InputError ("sp-opt gen: <what is wrong>") when the sizes cannot be split as asked.
void checkOptions(const GenOptions& o);

}  // namespace spopt::gen
