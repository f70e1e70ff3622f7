#pragma once
// What `sp-opt gen` builds: the model, its size, and how it is split over ranks.
#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace spopt::gen {

enum class Model { Mlp, Gpt };
enum class Dialect { Legacy, Current };  // c_* collectives with X/Out, or all_* with x/out

struct GenOptions {
  Model model = Model::Mlp;
  int64_t tp = 1;       // tensor-parallel degree T: ranks per tensor-parallel ring
  int64_t dp = 1;       // data-parallel degree D: world = T x D
  int64_t layers = 2;
  int64_t batch = 2;    // global batch, split over the D data-parallel groups
  int64_t seq = 8;
  int64_t hidden = 16;
  int64_t heads = 4;    // gpt only
  int64_t ffn = 0;      // 0: 4 x hidden
  DType dtype = DType::Float32;
  bool sequence_parallel = false;
  Dialect dialect = Dialect::Legacy;
  bool backward = true;
  bool sgd = true;      // --optimizer sgd (needs backward)
  double dropout = 0.1;

  int64_t ffnSize() const { return ffn > 0 ? ffn : 4 * hidden; }
  // Sequence parallelism only exists between tensor-parallel ranks; with T = 1 it is a no-op.
  bool sp() const { return sequence_parallel && tp > 1; }
};

// Throws InputError ("sp-opt gen: <what is wrong>") when the sizes cannot be split as asked.
void checkOptions(const GenOptions& o);

}  // namespace spopt::gen
