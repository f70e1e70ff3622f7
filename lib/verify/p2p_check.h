#pragma once
// The verifier's rules for point-to-point ops (analysis/p2p.h): each send or receive names a ring
// its rank belongs to and a peer that is another member of it; across the job every send pairs
// with a receive of the same dtype and element count, per channel (ring, from, to) in issue order.
// A send nobody receives (or a receive nobody sends) is reported as a missing partner.
#include <functional>
#include <string>

#include "analysis/p2p.h"
#include "ir/ir.h"

namespace spopt {

using ReportFn = std::function<void(std::string pointer, std::string message)>;

// The per-op rule: ring, membership, peer. `pointer` is the op's JSON pointer.
void checkP2POp(const Job& job, const Program& p, const Op& op, const PointToPoint& pp, const std::string& pointer,
                const ReportFn& report);
// The cross-rank rule: the first mismatch or missing partner of each channel, naming both ranks
// and ops. Run when every op passed its own rules.
void checkP2PPairing(const Job& job, const ReportFn& report);

}  // namespace spopt
