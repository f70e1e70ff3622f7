#include "support/checked_size.h"
#include "gen/options.h"

#include <algorithm>

#include "support/error.h"

namespace spopt::gen {
namespace {

[[noreturn]] void bad(const std::string& message) { throw InputError("sp-opt gen", "", message); }

void positive(const char* flag, int64_t v) {
  if (v < 1) bad(std::string(flag) + " must be at least 1, got " + std::to_string(v));
}

void divides(const char* by_flag, int64_t by, const char* what_flag, int64_t what) {
  if (what % by != 0)
    bad(std::string(by_flag) + " " + std::to_string(by) + " must divide " + what_flag + " " + std::to_string(what));
}

}  // namespace

void checkOptions(const GenOptions& o) {
  positive("--tp", o.tp);
  positive("--dp", o.dp);
  positive("--layers", o.layers);
  positive("--batch", o.batch);
  positive("--seq", o.seq);
  positive("--hidden", o.hidden);
  positive("--heads", o.heads);
  if (o.vocab < 0) bad("--vocab must be at least 1 (or 0 for none), got " + std::to_string(o.vocab));
  if (o.ffn < 0) bad("--ffn must be at least 1 (or 0 for 4 x hidden), got " + std::to_string(o.ffn));
  // Keep every count and every tensor's element count far from overflow (and the job writable).
  constexpr int64_t kMaxDim = int64_t(1) << 24;
  for (auto [flag, v] : {std::pair{"--tp", o.tp}, {"--dp", o.dp}, {"--batch", o.batch}, {"--seq", o.seq},
                         {"--hidden", o.hidden}, {"--heads", o.heads}, {"--ffn", o.ffnSize()}, {"--layers", o.layers},
                         {"--vocab", o.vocabSize()}})
    if (v > kMaxDim) bad(std::string(flag) + " " + std::to_string(v) + " is larger than " + std::to_string(kMaxDim));
  if (o.tp * o.dp > 65536) bad("--tp x --dp = " + std::to_string(o.tp * o.dp) + " ranks is more than 65536");
  // The largest tensors: activations [seq, batch, max(ffn, 3 hidden)] and gpt's scores
  // [batch, heads, seq, seq]. Their element counts must fit int64 with room to spare.
  // Checked products (support/checked_size.h); a float64 tensor of them fits int64 bytes too.
  constexpr int64_t kMaxElements = int64_t(1) << 59;
  int64_t width = std::max(o.ffnSize(), 3 * o.hidden);
  auto activations = checkedNumel(std::vector<int64_t>{o.seq, o.batch, width});
  const bool attention = o.model != Model::Mlp;
  auto scores = attention ? checkedNumel(std::vector<int64_t>{o.batch, o.heads, o.seq, o.seq}) : std::optional<int64_t>(0);
  auto logits = checkedNumel(std::vector<int64_t>{o.seq, o.batch, o.vocabSize()});
  if (!activations || !scores || !logits || std::max({*activations, *scores, *logits}) > kMaxElements)
    bad("the sizes give a tensor of more than 2^59 elements");
  divides("--dp", o.dp, "--batch", o.batch);
  divides("--tp", o.tp, "--ffn", o.ffnSize());
  if (o.sp()) divides("--tp", o.tp, "--seq", o.seq);
  if (attention) {
    divides("--heads", o.heads, "--hidden", o.hidden);
    divides("--tp", o.tp, "--heads", o.heads);
  }
  if (o.model == Model::Mlp && o.vocab > 0) bad("--vocab is for gpt and llama, not mlp");
  if (o.hasLmHead()) divides("--tp", o.tp, "--vocab", o.vocabSize());
  // Rotary embedding rotates pairs of a head's features.
  if (o.model == Model::Llama && (o.hidden / o.heads) % 2 != 0)
    bad("--hidden / --heads = " + std::to_string(o.hidden / o.heads) + " must be even for the rotary embedding");
  if (!(o.dropout >= 0.0 && o.dropout < 1.0)) bad("--dropout must be in [0, 1), got " + std::to_string(o.dropout));
  if (o.optimizes() && !o.backward)
    bad(std::string("--optimizer ") + (o.optimizer == Optimizer::Sgd ? "sgd" : "adamw") +
        " needs the backward pass; add --optimizer none to --no-backward");
  if (o.amp && o.dtype != DType::Float32) bad("--amp bf16 keeps float32 master weights: --dtype must be float32");
  if (o.amp && !o.backward) bad("--amp bf16 scales the loss for the backward pass; drop it with --no-backward");
  if (o.dtype != DType::Float32 && o.dtype != DType::Float64 && o.dtype != DType::Float16 && o.dtype != DType::BFloat16)
    bad("--dtype must be a floating type (float32, float64, float16, bfloat16)");
}

}  // namespace spopt::gen
