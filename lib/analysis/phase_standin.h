#pragma once
// STAND-IN until lib/ir/op_role.h lands on main (same names); deleted at the merge.
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

enum class Phase { Forward, Backward, Optimize, Loss, LossGrad, Unknown };
inline const char* phaseName(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimize: return "optimize";
    case Phase::Loss: return "loss";
    case Phase::LossGrad: return "loss-grad";
    case Phase::Unknown: return "unknown";
  }
  return "unknown";
}
inline Phase phaseOf(const Op& op) {
  auto r = op.attrs.getInt("op_role");
  if (!r) return Phase::Unknown;
  int64_t v = *r & ~int64_t(4 | 8 | 16);
  switch (v) {
    case 0: return Phase::Forward;
    case 1: return Phase::Backward;
    case 2: return Phase::Optimize;
    case 256: return Phase::Loss;
    case 257: return Phase::LossGrad;
    default: return Phase::Unknown;
  }
}
inline std::string eventToRecord(const Op& op) {
  if (!op.hasDistAttr()) return "";
  return op.dist_attr.getString("event_to_record").value_or("");
}
inline std::vector<std::string> eventsToWait(const Op& op) {
  std::vector<std::string> out;
  if (!op.hasDistAttr()) return out;
  if (auto one = op.dist_attr.getString("events_to_wait")) return {*one};
  return out;  // the array form is read by the shared accessor after the merge
}

}  // namespace spopt
