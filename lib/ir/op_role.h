#pragma once
// Typed accessors for what scheduling needs (format.md): an op's phase from its `op_role` attr,
// its stream placement and cross-stream events from its dist_attr, and the ordering-only ops.
//
// op_role is Paddle's OpRole bit set: Forward 0, Backward 1, Optimize 2, RPC 4, Dist 8,
// LRSched 16, Loss 256. Backward|Loss (257) marks the loss-grad seed op. The RPC/Dist/LRSched bits
// do not change the phase and are ignored when reading it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace spopt {

// The OpRole bits; lib/gen writes these.
namespace op_role {
inline constexpr int kForward = 0;
inline constexpr int kBackward = 1;
inline constexpr int kOptimize = 2;
inline constexpr int kRPC = 4;
inline constexpr int kDist = 8;
inline constexpr int kLRSched = 16;
inline constexpr int kLoss = 256;
inline constexpr int kIgnoredBits = kRPC | kDist | kLRSched;
}  // namespace op_role

enum class Phase { Forward, Backward, Optimize, Loss, LossGrad, Unknown };
const char* phaseName(Phase p);  // "forward", "backward", "optimize", "loss", "loss-grad", "unknown"
// The phase of an op_role value (bits above ignored); Unknown for any other combination.
Phase phaseOfRole(int64_t role);
// The op's phase; Unknown when op_role is missing or not an integer.
Phase phaseOf(const Op& op);
// The backward's phases: the gradient ops and the loss's own gradient.
inline bool isBackward(Phase p) { return p == Phase::Backward || p == Phase::LossGrad; }
// The op_role integer of a phase (Unknown is not allowed: std::logic_error).
int roleOf(Phase p);
// Sets attrs.op_role to the phase's value (keeping its position when present).
void setPhase(Op& op, Job& job, Phase p);

// Stream placement and events, in the op's dist_attr (setters create the dist_attr when absent).
// executionStream: Op::executionStream() ("default" when absent or empty).
void setExecutionStream(Op& op, Job& job, std::string_view stream);
std::string eventToRecord(const Op& op);             // "" when absent
void setEventToRecord(Op& op, Job& job, std::string_view event);
std::vector<std::string> eventsToWait(const Op& op);  // empty when absent or not a string array
void setEventsToWait(Op& op, Job& job, const std::vector<std::string>& events);
int64_t streamPriority(const Op& op);                 // 0 when absent
void setStreamPriority(Op& op, Job& job, int64_t priority);
int64_t schedulingPriority(const Op& op);             // 0 when absent
void setSchedulingPriority(Op& op, Job& job, int64_t priority);


}  // namespace spopt
