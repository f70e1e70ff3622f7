#include "verify/p2p_check.h"

#include "ir/json_pointer.h"
#include "ops/shape_math.h"

namespace spopt {
namespace {

// "send_v2 float32[4,8] (/programs/0/blocks/0/ops/3)"
std::string describe(const Op& op) {
  auto p = asPointToPoint(op);
  const Var* v = p ? p->tensor : nullptr;
  return std::string(op.type) + " " + (v ? typeText(*v) : std::string("?")) + " (" + opPointer(op) + ")";
}

std::string rankText(int64_t r) { return "rank " + std::to_string(r); }

}  // namespace

void checkP2POp(const Job& job, const Program& p, const Op& op, const PointToPoint& pp, const std::string& at, const ReportFn& report) {
  if (pp.ring_id < 0 && !op.attrs.getInt("ring_id")) return report(at + "/attrs/ring_id", std::string(op.type) + " needs an integer ring_id");
  const ProcessGroup* g = job.group(pp.ring_id);
  if (!g) return report(at + "/attrs/ring_id", "ring_id " + std::to_string(pp.ring_id) + " has no process group");
  int self = g->positionOf(p.rank);
  if (self < 0) return report(at + "/attrs/ring_id", rankText(p.rank) + " is not a member of ring " + std::to_string(pp.ring_id));
  const std::string ring = "ring " + std::to_string(pp.ring_id);
  if (pp.peer < 0 || pp.peer >= int64_t(g->ranks.size()))
    return report(at + "/attrs/peer", "peer " + std::to_string(pp.peer) + " is not a position in " + ring + " (size " +
                                          std::to_string(g->ranks.size()) + ")");
  if (pp.peer == self)
    report(at + "/attrs/peer", "peer " + std::to_string(pp.peer) + " is " + rankText(p.rank) + "'s own position in " + ring +
                                   ": a rank cannot " + (pp.kind == P2PKind::Send ? "send to" : "receive from") + " itself");
}

void checkP2PPairing(const Job& job, const ReportFn& report) {
  for (const P2PChannel& c : p2pChannels(job)) {
    const std::string from = rankText(c.from), to = rankText(c.to), ring = "ring " + std::to_string(c.ring_id);
    size_t n = std::min(c.sends.size(), c.recvs.size());
    bool reported = false;
    for (size_t k = 0; k < n && !reported; ++k) {
      auto s = asPointToPoint(*c.sends[k]), r = asPointToPoint(*c.recvs[k]);
      const Var *sv = s->tensor, *rv = r->tensor;
      if (!sv || !rv) continue;  // the op's own rule reports the missing slot
      std::string what;
      if (sv->dtype != rv->dtype) what = "dtype differs";
      else if (sv->numel() != rv->numel())
        what = "size differs (" + std::to_string(sv->numel()) + " vs " + std::to_string(rv->numel()) + " elements)";
      if (what.empty()) continue;
      reported = true;
      report(opPointer(*c.recvs[k]), ring + " send #" + std::to_string(k) + " from " + from + " to " + to + ": " + what + ": " + from +
                                         " sends " + describe(*c.sends[k]) + ", " + to + " receives " + describe(*c.recvs[k]));
    }
    if (reported || c.sends.size() == c.recvs.size()) continue;
    const bool extra_send = c.sends.size() > c.recvs.size();
    const Op& unmatched = extra_send ? *c.sends[n] : *c.recvs[n];
    report(opPointer(unmatched), ring + ": " + from + " sends " + std::to_string(c.sends.size()) + " tensor(s) to " + to + ", which receives " +
                                     std::to_string(c.recvs.size()) + " from it; first unmatched: " + (extra_send ? from : to) + " " +
                                     describe(unmatched) + " has no " + (extra_send ? "receive on " + to : "send on " + from));
  }
}

}  // namespace spopt
