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

namespace {
// Sets `key` of `o` to `raw` and records the op in the journal, unless the object holds that very
// text already: a scheduler that restates an op's stream or events (most ops of a generated job
// carry them) neither copies the op's shared object nor puts it under the verifier again.
// `journal`: how the edit is recorded (journalExecutionAttrs for the execution attributes).
void setUnlessSame(Op& op, JsonObject& o, Job& job, std::string_view key, std::string_view raw, void (*journal)(Op&)) {
  if (const std::string_view* now = o.find(key); now && *now == raw) return;
  o.setRaw(job.editArena(), key, raw);
  journal(op);
}
JsonObject& distAttr(Op& op) {
  ensureField(op.fields, "dist_attr");
  return op.dist_attr;
}
}  // namespace

void setPhase(Op& op, Job& job, Phase p) { setUnlessSame(op, op.attrs, job, "op_role", intToRaw(roleOf(p)), journalOp); }

void setExecutionStream(Op& op, Job& job, std::string_view stream) {
  setUnlessSame(op, distAttr(op), job, "execution_stream", quoteJson(stream), journalExecutionAttrs);
}

std::string eventToRecord(const Op& op) {
  if (!op.hasDistAttr()) return "";
  return op.dist_attr.getString("event_to_record").value_or("");
}
void setEventToRecord(Op& op, Job& job, std::string_view event) {
  setUnlessSame(op, distAttr(op), job, "event_to_record", quoteJson(event), journalExecutionAttrs);
}

std::vector<std::string> eventsToWait(const Op& op) {
  if (!op.hasDistAttr()) return {};
  auto raw = op.dist_attr.raw("events_to_wait");
  if (!raw || *raw == "[]") return {};
  return rawToStringArray(*raw).value_or(std::vector<std::string>{});
}
void setEventsToWait(Op& op, Job& job, const std::vector<std::string>& events) {
  setUnlessSame(op, distAttr(op), job, "events_to_wait", stringArrayToRaw(events), journalExecutionAttrs);
}

int64_t streamPriority(const Op& op) { return op.hasDistAttr() ? op.dist_attr.getInt("stream_priority").value_or(0) : 0; }
void setStreamPriority(Op& op, Job& job, int64_t priority) {
  setUnlessSame(op, distAttr(op), job, "stream_priority", intToRaw(priority), journalExecutionAttrs);
}
int64_t schedulingPriority(const Op& op) { return op.hasDistAttr() ? op.dist_attr.getInt("scheduling_priority").value_or(0) : 0; }
void setSchedulingPriority(Op& op, Job& job, int64_t priority) {
  setUnlessSame(op, distAttr(op), job, "scheduling_priority", intToRaw(priority), journalExecutionAttrs);
}

}  // namespace spopt
