#pragma once
// Paddle marks a size known only at run time (the batch of a training program) as -1. What costs
// sizes (analyze: FLOPs, bytes, memory, the simulated step) takes one size for every such dim, so
// that a dynamic dimension is never costed as nothing.
#include <cstdint>

#include "ir/ir.h"

namespace spopt {

// Sets every -1 dim of every var of `job` to `size` (times the known factor Paddle recorded for
// it), then, in program order, re-sizes an op's dynamic output that its shape rule rejects so that
// the rule holds (the dims its rule names, a stride-2 convolution's half plane; a flattened
// [-1, 512] is 512 x size): see dynamic_dims.cpp. Returns how many vars had a -1 dim.
size_t sizeDynamicDims(Job& job, int64_t size);

}  // namespace spopt
