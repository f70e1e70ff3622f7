#pragma once
// coalesce_tensor fuses gradients into one buffer (FusedOutput) so that one all-reduce moves them
// all. Paddle's programs declare that buffer [0]: its size is known at run time only. It follows
// from what it fuses, so whatever needs sizes (analyze's wire bytes, replay) sizes it from them.
#include <cstddef>

#include "ir/ir.h"

namespace spopt {

// Gives every coalesce_tensor FusedOutput declared with no elements the sum of its Outputs'
// elements (no alignment padding: Paddle pads each to the device's alignment, a few hundred bytes
// at most). Run after the dynamic dims are sized. Returns how many buffers it sized.
size_t sizeFusedBuffers(Job& job);

}  // namespace spopt
