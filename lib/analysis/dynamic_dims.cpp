#include "analysis/dynamic_dims.h"

namespace spopt {

size_t sizeDynamicDims(Job& job, int64_t size) {
  size_t vars = 0;
  for (auto& program : job.programs)
    for (auto& block : program->blocks)
      for (auto& var : block->vars) {
        bool dynamic = false;
        for (int64_t& d : var->shape)
          if (d == -1) d = size, dynamic = true;
        vars += dynamic;
      }
  return vars;
}

}  // namespace spopt
