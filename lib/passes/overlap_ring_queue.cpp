// The ring-order policy of overlap-collectives' list scheduler (see overlap_ring_queue.h).
#include "passes/overlap_ring_queue.h"

#include <algorithm>

namespace spopt {
namespace {

// Ancestors the bound visits at most per question: it answers "at least this much" and stops;
// past this many it answers with what it found (a lower bound still), keeping the scheduler
// linear in the region's size.
constexpr size_t kBoundVisits = 64;

}  // namespace

RingQueues::RingQueues(const RegionGraph& g, const std::vector<double>& cost, bool reorder) : g_(g), cost_(cost), reorder_(reorder) {
  if (!reorder_) return;
  rings_.resize(g.ring_count);
  position_.assign(g.n, 0);
  for (uint32_t i = 0; i < g.n; ++i)
    if (g.ring[i] >= 0) {
      std::vector<uint32_t>& ops = rings_[g.ring_index[i]].ops;
      position_[i] = uint32_t(ops.size());
      ops.push_back(i);
    }
  issued_.assign(g.n, 0);
  passed_.assign(g.n, 0);
  seen_.assign(g.n, 0);
}

RingQueues::Candidate RingQueues::candidate(uint32_t ring_index, const std::vector<uint8_t>& ready) {
  if (!reorder_) return {kNone, Turn::Head};  // the graph chains each ring: a ready collective is its ring's head
  Ring& r = rings_[ring_index];
  while (r.head < r.ops.size() && issued_[r.ops[r.head]]) ++r.head;
  if (r.head == r.ops.size()) return {};
  const uint32_t head = r.ops[r.head];
  if (ready[head]) return {head, Turn::Head};
  if (r.passed) return {};
  // The earliest ready collective after the head goes first, if any does.
  while (!r.waiting.empty() && issued_[r.ops[r.waiting.top()]]) r.waiting.pop();
  if (r.waiting.empty()) return {};
  return {r.ops[r.waiting.top()], Turn::MayPass};
}

bool RingQueues::mayPass(uint32_t c, double now, double start, const std::vector<uint8_t>& done, const std::vector<double>& finish) {
  const Ring& r = rings_[g_.ring_index[c]];
  const double end = start + cost_[c];
  return headReadyBound(r.ops[r.head], now, end, done, finish) >= end;
}

void RingQueues::released(uint32_t c) {
  if (reorder_) rings_[g_.ring_index[c]].waiting.push(position_[c]);
}

void RingQueues::issued(uint32_t c) {
  if (!reorder_) return;
  Ring& r = rings_[g_.ring_index[c]];
  issued_[c] = 1;
  if (r.head < r.ops.size() && r.ops[r.head] == c) {
    r.passed = false;
  } else {
    r.passed = true;
    passed_[c] = 1;
  }
}

double RingQueues::headReadyBound(uint32_t head, double now, double enough, const std::vector<uint8_t>& done,
                                  const std::vector<double>& finish) {
  // One compute stream runs every unscheduled compute ancestor, one after another, from `now`; a
  // scheduled one (or a collective in flight) is there at its finish at the earliest.
  ++stamp_;
  double work = 0, latest = now;
  size_t visits = 0;
  stack_.assign(1, head);
  seen_[head] = stamp_;
  while (!stack_.empty() && std::max(now + work, latest) < enough && visits < kBoundVisits) {
    uint32_t i = stack_.back();
    stack_.pop_back();
    ++visits;
    for (uint32_t k = g_.pred_start[i]; k < g_.pred_start[i + 1]; ++k) {
      uint32_t p = g_.pred[k];
      if (seen_[p] == stamp_) continue;
      seen_[p] = stamp_;
      if (done[p]) {
        latest = std::max(latest, finish[p]);
        continue;
      }
      if (g_.ring[p] < 0) work += cost_[p];
      stack_.push_back(p);
    }
  }
  return std::max(now + work, latest);
}

}  // namespace spopt
