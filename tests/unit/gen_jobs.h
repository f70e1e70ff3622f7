#pragma once
// Generated jobs the unit tests share.
#include <memory>

#include "gen/generate.h"
#include "io/loader.h"

namespace spopt::test {

// A 2-layer sequence-parallel GPT of hidden 16 on `tp` ranks: every pass of the chain has work.
inline std::unique_ptr<Job> smallGptJob(int64_t tp) {
  gen::GenOptions o;
  o.model = gen::Model::Gpt;
  o.tp = tp;
  o.layers = 2;
  o.hidden = 16;
  o.heads = 4;
  o.seq = 8;
  o.sequence_parallel = true;
  return loadJobFromText(gen::generateJobText(o), "gpt.json");
}

}  // namespace spopt::test
