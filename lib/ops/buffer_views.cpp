#include "ops/buffer_views.h"

#include "ops/op_view.h"

namespace spopt {

std::vector<BufferView> bufferViewsOf(const Op& op) {
  std::vector<BufferView> views;
  OpView view(op);
  if (!view.def()) return views;
  for (const OperandDef& result : view.def()->outputs) {
    if (result.view_of.empty()) continue;
    const Slot* slot = view.output(result.name);
    const Var* buffer = view.out(result.view_of);
    if (!slot || !buffer) continue;
    int64_t offset = 0;
    for (const Arg& a : slot->args) {
      if (!a.var) continue;
      views.push_back({a.var, buffer, offset});
      int64_t n = a.var->numel();
      offset = offset < 0 || n < 0 ? -1 : offset + n;
    }
  }
  return views;
}

BufferAliases::BufferAliases(const Block& block) {
  for (const Op& op : block.inOrder())
    for (const BufferView& v : bufferViewsOf(op)) {
      buffer_of_[v.view] = v.buffer;
      views_of_[v.buffer].push_back(v.view);
    }
}

}  // namespace spopt
