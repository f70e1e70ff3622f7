#pragma once
// The generated models. Each emits one rank's block into the builder (called once per phase).
#include "gen/options.h"
#include "gen/program_builder.h"

namespace spopt::gen {

// Paddle's test of the sequence-parallel pass (test_static_sequence_parallel_pass.py), per layer:
// layer_norm -> gelu -> column-parallel matmul -> gelu -> row-parallel matmul -> dropout -> gelu
// -> layer_norm; layer_norm biases frozen; loss = reduce_sum.
void emitMlp(ProgramBuilder& b, const GenOptions& o, int64_t rank);

// A GPT-style pre-norm decoder (no biases in linears, no causal mask): per layer
// x + dropout(attention(layer_norm(x))), then + dropout(mlp(layer_norm(.))); a final layer_norm;
// loss = reduce_sum, or with --vocab the language-model ends of lm_head.h around the layers.
void emitGpt(ProgramBuilder& b, const GenOptions& o, int64_t rank);

// Llama: per layer x + attention(rms_norm(x)) with rotary q and k and a causal mask, then
// + down(swiglu(gate(.), up(.))) of rms_norm; no biases, no dropout; a final rms_norm; the
// language-model ends of lm_head.h (untied head).
void emitLlama(ProgramBuilder& b, const GenOptions& o, int64_t rank);

// The name scope of layer l's ops and vars ("/layer_3/"), as Paddle's dumps name them.
inline std::string layerScope(int64_t l) { return "/layer_" + std::to_string(l) + "/"; }

}  // namespace spopt::gen
