#pragma once
// Paddle marks a size known only at run time (the batch of a training program) as -1. What costs
// sizes (analyze: FLOPs, bytes, memory, the simulated step) takes one size for every such dim, so
// that a dynamic dimension is never costed as nothing.
#include <cstdint>

#include "ir/ir.h"

namespace spopt {

// Sets every -1 dim of every var of `job` to `size`; returns how many vars had one.
size_t sizeDynamicDims(Job& job, int64_t size);

}  // namespace spopt
