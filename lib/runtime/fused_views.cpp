#include "runtime/fused_views.h"

#include <cstring>

#include "ops/buffer_views.h"

namespace spopt::rt {

FusedViews::FusedViews(const Block& block) {
  for (const Op& op : block.ops) {
    std::vector<BufferView> views = bufferViewsOf(op);
    if (views.empty()) continue;
    const Var* buffer = views.front().buffer;
    int64_t total = 0;
    for (const BufferView& v : views)
      total = v.buffer != buffer || v.offset < 0 || v.view->dtype != buffer->dtype ? -1 : v.offset + v.view->numel();
    if (total <= 0 || buffer->numel() < total) continue;  // not sized for them: replay keeps them apart
    for (const BufferView& v : views) {
      Slice s{buffer, v.view, v.offset};
      members_[v.view] = s;
      buffers_[buffer].push_back(s);
    }
    coalesce_of_[buffer] = &op;
  }
}

void FusedViews::afterWrite(const Op& writer, const Var& var, const std::function<Tensor&(const Var&)>& value,
                            const std::function<void(const Var&, Tensor)>& make) const {
  if (auto m = members_.find(&var); m != members_.end()) {
    const Slice& s = m->second;
    if (coalesce_of_.at(s.buffer) == &writer) return;
    Tensor& buffer = value(*s.buffer);
    const Tensor& member = value(var);
    if (buffer.empty() || member.empty()) return;  // the buffer's last use is past: nothing reads it
    if (buffer.sharesBuffer()) buffer = buffer.clone();  // a reshape's view of it keeps the old bytes
    size_t esz = storageSize(buffer.storage());
    std::memcpy(static_cast<std::byte*>(buffer.raw()) + size_t(s.offset) * esz, member.raw(), member.bytes());
    return;
  }
  auto b = buffers_.find(&var);
  if (b == buffers_.end() || coalesce_of_.at(&var) == &writer) return;
  const Tensor& buffer = value(var);
  if (buffer.empty()) return;
  size_t esz = storageSize(buffer.storage());
  for (const Slice& s : b->second) {
    Tensor part(s.member->dtype, s.member->shape);
    std::memcpy(part.raw(), static_cast<const std::byte*>(buffer.raw()) + size_t(s.offset) * esz, part.bytes());
    make(*s.member, std::move(part));
  }
}

}  // namespace spopt::rt
