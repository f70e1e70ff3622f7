#pragma once
// Whether an op may run a second time, later (in backward), from the same inputs and compute the
// same values bitwise: what a recompute pass asks of every op it copies. The answer comes from the
// op's catalogue definition (ops/op_def.h), never from its name:
//  - the Recomputable trait (pure, or random with a seed), and no SideEffects;
//  - not a collective: a copy on one rank without the others would desynchronise its ring;
//  - not an in-place spelling (the copy would overwrite what forward kept);
//  - a Random op only when a copy draws the same numbers (OpDef::copy_draws_same: dropout with
//    fix_seed, or in test mode).
#include <optional>
#include <string>

#include "ir/ir.h"

namespace spopt {

struct NotRecomputable {
  std::string code;    // not-catalogued, collective, side-effects, in-place, random-unseeded, not-recomputable
  std::string reason;  // plain words, naming the op type
};

std::optional<NotRecomputable> whyNotRecomputable(const Op& op);

}  // namespace spopt
