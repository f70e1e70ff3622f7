#pragma once
// coalesce_tensor's views, replayed by copying. In Paddle its Output vars are slices of one
// FusedOutput buffer: a backward op writing a gradient writes into the buffer, and the fused
// all-reduce of the buffer is what the optimizer then reads through the gradients. Replay gives
// every var its own buffer, so it keeps the two in step instead: a write of a member is copied
// into its slice of the buffer, and a write of the buffer is copied out to every member. Needs the
// buffer sized for its members (analysis/fused_buffers.h sizes Paddle's [0]).
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "runtime/tensor.h"

namespace spopt::rt {

class FusedViews {
 public:
  // The views made in `block` (ops/buffer_views.h) whose buffer has room for all of them.
  explicit FusedViews(const Block& block);
  bool empty() const { return members_.empty(); }
  // The buffer `member` is a slice of (null when it is no member).
  const Var* bufferOf(const Var& member) const {
    auto it = members_.find(&member);
    return it == members_.end() ? nullptr : it->second.buffer;
  }
  // After `writer` wrote `var`: `value(v)` is v's current tensor (empty when it has none); copies
  // the member into its buffer slice, or the buffer out to its members (making theirs if absent
  // through `make`). The coalesce_tensor op itself fills both: nothing to do.
  void afterWrite(const Op& writer, const Var& var, const std::function<Tensor&(const Var&)>& value,
                  const std::function<void(const Var&, Tensor)>& make) const;

 private:
  struct Slice {
    const Var* buffer;
    const Var* member;
    int64_t offset;  // elements into the buffer
  };
  std::unordered_map<const Var*, Slice> members_;                    // member -> its slice
  std::unordered_map<const Var*, std::vector<Slice>> buffers_;       // buffer -> its slices
  std::unordered_map<const Var*, const Op*> coalesce_of_;            // buffer -> the op fusing it
};

}  // namespace spopt::rt
