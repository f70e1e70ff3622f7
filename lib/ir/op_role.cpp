#include "ir/op_role.h"

#include <stdexcept>

#include "ir/json_text.h"

namespace spopt {

const char* phaseName(Phase p) {
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

Phase phaseOfRole(int64_t role) {
  switch (role & ~int64_t(op_role::kIgnoredBits)) {
    case op_role::kForward: return Phase::Forward;
    case op_role::kBackward: return Phase::Backward;
    case op_role::kOptimize: return Phase::Optimize;
    case op_role::kLoss: return Phase::Loss;
    case op_role::kLoss | op_role::kBackward: return Phase::LossGrad;
    default: return Phase::Unknown;
  }
}

Phase phaseOf(const Op& op) {
  auto role = op.attrs.getInt("op_role");
  return role ? phaseOfRole(*role) : Phase::Unknown;
}

int roleOf(Phase p) {
  switch (p) {
    case Phase::Forward: return op_role::kForward;
    case Phase::Backward: return op_role::kBackward;
    case Phase::Optimize: return op_role::kOptimize;
    case Phase::Loss: return op_role::kLoss;
    case Phase::LossGrad: return op_role::kLoss | op_role::kBackward;
    case Phase::Unknown: break;
  }
  throw std::logic_error("roleOf: the Unknown phase has no op_role");
}

void setPhase(Op& op, Job& job, Phase p) {
  op.attrs.setInt(job.arena, "op_role", roleOf(p));
  journalOp(op);
}

namespace {
JsonObject& distAttr(Op& op) {
  ensureField(op.fields, "dist_attr");
  return op.dist_attr;
}
}  // namespace

void setExecutionStream(Op& op, Job& job, std::string_view stream) {
  distAttr(op).setString(job.arena, "execution_stream", stream);
  journalOp(op);
}

std::string eventToRecord(const Op& op) {
  if (!op.hasDistAttr()) return "";
  return op.dist_attr.getString("event_to_record").value_or("");
}
void setEventToRecord(Op& op, Job& job, std::string_view event) {
  distAttr(op).setString(job.arena, "event_to_record", event);
  journalOp(op);
}

std::vector<std::string> eventsToWait(const Op& op) {
  if (!op.hasDistAttr()) return {};
  auto raw = op.dist_attr.raw("events_to_wait");
  if (!raw || *raw == "[]") return {};
  return rawToStringArray(*raw).value_or(std::vector<std::string>{});
}
void setEventsToWait(Op& op, Job& job, const std::vector<std::string>& events) {
  distAttr(op).setRaw(job.arena, "events_to_wait", stringArrayToRaw(events));
  journalOp(op);
}

int64_t streamPriority(const Op& op) { return op.hasDistAttr() ? op.dist_attr.getInt("stream_priority").value_or(0) : 0; }
void setStreamPriority(Op& op, Job& job, int64_t priority) {
  distAttr(op).setInt(job.arena, "stream_priority", priority);
  journalOp(op);
}
int64_t schedulingPriority(const Op& op) { return op.hasDistAttr() ? op.dist_attr.getInt("scheduling_priority").value_or(0) : 0; }
void setSchedulingPriority(Op& op, Job& job, int64_t priority) {
  distAttr(op).setInt(job.arena, "scheduling_priority", priority);
  journalOp(op);
}


}  // namespace spopt
