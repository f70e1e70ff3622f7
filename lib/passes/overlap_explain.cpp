// overlap-collectives' --explain reason for a collective its schedule leaves exposed (see
// overlap_support.h): which limit held it and how long the compute stream waited.
#include <cstdio>

#include "passes/overlap_support.h"

namespace spopt {
namespace {

std::string us(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  return b;
}

std::string capText(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", f);
  return b;
}

std::string limitText(const CollectiveOutcome& c, const ExposureLimits& limits) {
  switch (c.limit) {
    case Limit::RingOrder:
      return "it waited " + us(c.ring_wait_s) + " for the ring's previous collective, which it may not pass (one ring's collectives "
             "keep one order on every member rank; one passes an earlier one only while that one waits for its inputs)";
    case Limit::MaxInFlight:
      return "max-in-flight=" + std::to_string(limits.max_in_flight) + " collectives of its ring were already in flight";
    case Limit::MemoryCap:
      return "the full schedule raised peak memory by more than memory-cap=" + capText(limits.memory_cap) +
             ", so ops moved at most a smaller window";
    case Limit::Window:
      return "no independent compute within window=" + std::to_string(limits.window) + " ops";
    default:
      return "no independent compute: every op left before its consumers depends on its result";
  }
}

}  // namespace

Refusal exposedRefusal(const CollectiveOutcome& c, const ExposureLimits& limits, bool explaining) {
  Refusal r{limitCode(c.limit), ""};
  if (explaining)
    r.reason = "ring " + std::to_string(commCollective(*c.op)->ring_id) + ": " + us(c.exposed_s) + " of its " + us(c.cost_s) +
               " exposed: " + limitText(c, limits);
  return r;
}

}  // namespace spopt
