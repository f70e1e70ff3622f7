#include "analysis/p2p.h"

#include <map>
#include <tuple>

#include "ops/op_view.h"

namespace spopt {

std::optional<PointToPoint> asPointToPoint(const Op& op) {
  ResolvedOp r = resolveOp(op.type);
  if (!r || !r.def->p2p) return std::nullopt;
  OpView view(op, r);
  PointToPoint p;
  p.kind = *r.def->p2p;
  p.ring_id = view.attrs.getInt("ring_id").value_or(-1);
  p.peer = view.attrs.getInt("peer").value_or(-1);
  p.tensor = p.kind == P2PKind::Send ? view.in("X") : view.out("Out");
  return p;
}

const char* p2pKindName(P2PKind k) { return k == P2PKind::Send ? "send" : "recv"; }

bool sameP2PGroup(const Op& prev, const Op& next) {
  auto a = asPointToPoint(prev), b = asPointToPoint(next);
  return a && b && a->ring_id == b->ring_id && prev.executionStream() == next.executionStream();
}

std::optional<int64_t> p2pPartner(const Job& job, int64_t rank, const PointToPoint& p) {
  const ProcessGroup* g = p.ring_id >= 0 ? job.group(p.ring_id) : nullptr;
  if (!g || p.peer < 0 || p.peer >= int64_t(g->ranks.size())) return std::nullopt;
  int self = g->positionOf(rank);
  if (self < 0 || self == p.peer) return std::nullopt;
  return g->ranks[size_t(p.peer)];
}

std::vector<P2PChannel> p2pChannels(const Job& job) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, P2PChannel> channels;
  for (const auto& prog : job.programs)
    for (const auto& b : prog->blocks)
      for (const Op& op : b->ops) {
        auto p = asPointToPoint(op);
        if (!p) continue;
        auto partner = p2pPartner(job, prog->rank, *p);
        if (!partner) continue;
        bool send = p->kind == P2PKind::Send;
        int64_t from = send ? prog->rank : *partner, to = send ? *partner : prog->rank;
        P2PChannel& c = channels[{p->ring_id, from, to}];
        c.ring_id = p->ring_id, c.from = from, c.to = to;
        (send ? c.sends : c.recvs).push_back(&op);
      }
  std::vector<P2PChannel> out;
  out.reserve(channels.size());
  for (auto& entry : channels) out.push_back(std::move(entry.second));
  return out;
}

}  // namespace spopt
