#pragma once
// Vars that are views into another var's buffer (a result declared `view_of` another, ops/op_def.h:
// coalesce_tensor's Outputs in its FusedOutput). Whatever orders ops by the vars they touch (the
// overlap scheduler, replay) must treat a write of a view as a write of its buffer and the
// reverse, or it would all-reduce the fused gradients before they are computed.
#include <cstdint>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "ir/ir.h"

namespace spopt {

struct BufferView {
  const Var* view;
  const Var* buffer;
  int64_t offset;  // elements into the buffer; -1 when a view's size is unknown
};

// The views `op` makes, in slot order.
std::vector<BufferView> bufferViewsOf(const Op& op);

// The views made in a block: the var each view's buffer is.
class BufferAliases {
 public:
  explicit BufferAliases(const Block& block);
  // The var whose buffer `v` is part of: its buffer when `v` is a view, else `v`.
  const Var* storage(const Var* v) const {
    auto it = buffer_of_.find(v);
    return it == buffer_of_.end() ? v : it->second;
  }
  // storage(v)'s id, read without loading `v` where it is no view (most vars).
  uint32_t storageId(const VarRef& v) const {
    if (buffer_of_.empty()) return v.id();
    auto it = buffer_of_.find(static_cast<const Var*>(v));
    return it == buffer_of_.end() ? v.id() : it->second->id;
  }
  // The views into `buffer` (empty when it has none).
  const std::vector<const Var*>& viewsOf(const Var* buffer) const {
    static const std::vector<const Var*> kNone;
    auto it = views_of_.find(buffer);
    return it == views_of_.end() ? kNone : it->second;
  }

 private:
  absl::flat_hash_map<const Var*, const Var*> buffer_of_;
  absl::flat_hash_map<const Var*, std::vector<const Var*>> views_of_;
};

}  // namespace spopt
