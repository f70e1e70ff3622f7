#include "analysis/fused_buffers.h"

#include <cstdint>
#include <limits>

#include "ops/op_view.h"

namespace spopt {

size_t sizeFusedBuffers(Job& job) {
  const OpDef& coalesce = opDef("coalesce_tensor");
  size_t sized = 0;
  for (auto& program : job.programs)
    for (auto& block : program->blocks)
      for (Op& op : block->ops) {
        OpView view(op);
        if (view.def() != &coalesce) continue;
        Var* buffer = view.out("FusedOutput");
        const Slot* outs = view.output("Output");
        if (!buffer || !outs || buffer->numel() != 0) continue;
        int64_t total = 0;
        for (const Arg& a : outs->args) {
          int64_t n = a.var ? a.var->numel() : -1;
          if (n < 0 || total > std::numeric_limits<int64_t>::max() - n) {
            total = -1;
            break;
          }
          total += n;
        }
        if (total <= 0) continue;
        buffer->shape = {total};
        ++sized;
      }
  return sized;
}

}  // namespace spopt
