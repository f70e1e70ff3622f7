// Regions, order application and comm-stream assignment of overlap-collectives
// (see overlap_support.h).
#include <algorithm>
#include <optional>
#include <string>

#include "ir/op_role.h"
#include "passes/overlap_support.h"

namespace spopt {

std::string commStreamName(int64_t ring_id) { return "comm_ring_" + std::to_string(ring_id); }

std::optional<Collective> commCollective(const Op& op, OpFactsCache* facts) {
  auto c = facts ? facts->collective(op) : asCollective(op);
  // An op that computes and all-reduces inside its kernel (the vocab-parallel loss) stays on the
  // compute stream, where Paddle runs it and its NCCL calls: moving it would move its compute.
  if (!c || !communicates(*c) || c->kind == CollectiveKind::KernelAllReduce) return std::nullopt;
  return c;
}

std::optional<int64_t> commRing(const Op& op, OpFactsCache* facts) {
  auto c = commCollective(op, facts);
  return c ? std::optional<int64_t>(c->ring_id) : std::nullopt;
}

std::optional<RegionPhases> regionPhasesNamed(std::string_view name) {
  if (name == "backward") return RegionPhases::Backward;
  if (name == "backward+optimize") return RegionPhases::BackwardOptimize;
  if (name == "all") return RegionPhases::All;
  return std::nullopt;
}

std::vector<std::vector<Op*>> scheduleRegions(Block& entry, RegionPhases phases, OpFactsCache* facts) {
  auto inRegion = [phases](Phase ph) {
    switch (phases) {
      case RegionPhases::Backward: return ph == Phase::Backward;
      case RegionPhases::BackwardOptimize: return ph == Phase::Backward || ph == Phase::Optimize;
      case RegionPhases::All: return true;
    }
    return false;
  };
  std::vector<std::vector<Op*>> regions(1);
  for (Op& op : entry.inOrder()) {
    const bool movable = facts ? inRegion(facts->facts(op).phase) && !facts->facts(op).has_sub_block
                               : inRegion(phaseOf(op)) && !op.attrs.has("sub_block");
    if (movable) regions.back().push_back(&op);
    else if (!regions.back().empty()) regions.emplace_back();
  }
  if (regions.back().empty()) regions.pop_back();
  return regions;
}

void applyOrder(const std::vector<Op*>& region, const std::vector<Op*>& order) {
  // Only the ops between the first and the last place where the orders differ move: a region that
  // keeps its order journals no move, so the verifier after the pass re-checks no ring for it.
  if (!region.empty()) region.front()->block->reorderRun(region, order);
}

namespace {
// `ev`, added once to what `op` waits for; true when added.
// The setters below change what `facts` read of the op: it forgets the op.
bool addWait(Op& op, Job& job, const std::string& ev, OpFactsCache* facts) {
  std::vector<std::string> waits = eventsToWait(op);
  if (std::find(waits.begin(), waits.end(), ev) != waits.end()) return false;
  waits.push_back(ev);
  setEventsToWait(op, job, waits);
  if (facts) facts->forget(op);
  return true;
}
std::string recordedEvent(Op& op, Job& job, OpFactsCache* facts) {
  std::string ev = eventToRecord(op);
  if (ev.empty()) {
    ev = "overlap_ev_" + std::to_string(op.id);
    setEventToRecord(op, job, ev);
    if (facts) facts->forget(op);
  }
  return ev;
}
}  // namespace

std::pair<size_t, size_t> assignCommStreams(Job& job, const std::vector<std::vector<Op*>>& regions, const BufferAliases& aliases,
                                            OpFactsCache* facts) {
  size_t moved = 0, events = 0;
  for (const auto& region : regions)
    for (Op* op : region) {
      auto ring = commRing(*op, facts);
      if (!ring) continue;
      std::string stream = commStreamName(*ring);
      // The facts hold the stream read before the pass (interned): no attribute read per collective.
      if ((facts ? facts->streamName(facts->facts(*op).stream) : op->executionStream()) != stream) ++moved;
      setExecutionStream(*op, job, stream);
      if (facts) facts->forget(*op);
      Block& blk = *op->block;
      // What the collective overwrites that another stream may still read: an output var that is
      // also an input (in place), and the views into an output's buffer (coalesce_tensor's
      // gradients, which a fused all-reduce rewrites without naming them).
      std::vector<const Var*> overwritten, views;
      for (const Slot& o : op->outputs)
        for (const Arg& a : o.args) {
          for (const Slot& i : op->inputs)
            for (const Arg& b : i.args)
              if (a.var == b.var) overwritten.push_back(a.var);
          for (const Var* v : aliases.viewsOf(a.var)) overwritten.push_back(v), views.push_back(v);
        }
      Op* last_reader = nullptr;
      for (const Var* v : overwritten)
        for (Op* r : v->readers)
          if (r != op && r->block == &blk && blk.isBefore(r, op) && r->executionStream() != stream &&
              (!last_reader || blk.isBefore(last_reader, r)))
            last_reader = r;
      if (last_reader) events += addWait(*op, job, recordedEvent(*last_reader, job, facts), facts);
      // A later reader of a view reads what the collective wrote, and names only the view: it
      // waits for the collective's event (a reader of the buffer itself waits by data flow).
      for (const Var* v : views)
        for (Op* r : v->readers)
          if (r->block == &blk && blk.isBefore(op, r) && r->executionStream() != stream)
            events += addWait(*r, job, recordedEvent(*op, job, facts), facts);
    }
  return {moved, events};
}

}  // namespace spopt
