#include "analysis/comm_stats.h"

#include <algorithm>
#include <cstdint>

#include "ops/op_view.h"
#include "support/checked_size.h"

namespace spopt {

namespace {
int64_t groupSize(const Op& op, const Collective& c, const Job& job) {
  if (const ProcessGroup* g = job.group(c.ring_id)) return static_cast<int64_t>(g->ranks.size());
  return op.attrs.getInt("nranks").value_or(1);
}

std::optional<int64_t> payloadBytes(const Op& op, const Collective& c) {
  // A kernel all-reduce moves what its definition says (a few values per row), not its input.
  if (c.kind == CollectiveKind::KernelAllReduce) {
    OpView v(op);
    return v.def() && v.def()->cost.ring_payload ? v.def()->cost.ring_payload(v) : std::nullopt;
  }
  const Var* in = op.in(c.in_slot);
  if (!in) return std::nullopt;
  return in->byteSize();  // nullopt: an unknown dim, or a size past int64 (support/checked_size.h)
}

// In 128 bits, clamped: (n - 1) x payload may pass int64 for a huge ring.
int64_t clamped(__int128 w) { return w > __int128(INT64_MAX) ? INT64_MAX : int64_t(w); }

int64_t ringTraffic(const Op& op, const Collective& c, const Job& job, int64_t payload) {
  int64_t n = std::max<int64_t>(groupSize(op, c, job), 1);
  switch (c.kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::KernelAllReduce: return clamped(__int128(2) * (n - 1) * payload / n);
    case CollectiveKind::ReduceScatter: return clamped(__int128(n - 1) * payload / n);
    case CollectiveKind::AllGather: return clamped(__int128(n - 1) * payload);
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: return payload;
    case CollectiveKind::Identity: return 0;
  }
  return payload;
}
}  // namespace

std::optional<int64_t> collectiveBytes(const Op& op, const Collective& c, const Job& job, bool bus_factors) {
  auto payload = payloadBytes(op, c);
  if (!payload || !bus_factors) return payload;
  return ringTraffic(op, c, job, *payload);
}

void CommStats::add(const Op& op, const Collective& c, const Job& job) {
  ++count;
  ++by_kind[c.kind];
  auto payload = payloadBytes(op, c);
  if (!payload) {
    ++unknown_size;
    return;
  }
  payload_bytes = saturatingAdd(payload_bytes, *payload);
  ring_bytes = saturatingAdd(ring_bytes, ringTraffic(op, c, job, *payload));
}

CommStats commStats(const Program& p) {
  CommStats s;
  for (const auto& b : p.blocks)
    for (const Op& op : b->ops) {
      auto c = asCollective(op);
      if (c && communicates(*c)) s.add(op, *c, *p.job);
    }
  return s;
}

}  // namespace spopt
