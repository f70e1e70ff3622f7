// The list scheduler of overlap-collectives (see overlap_support.h).
#include <algorithm>
#include <deque>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "ir/op_role.h"
#include "passes/overlap_graph.h"
#include "passes/overlap_ring_queue.h"
#include "passes/overlap_support.h"

namespace spopt {
namespace {

constexpr double kHiddenSlack = 1e-3;  // exposed below this fraction of the cost counts as hidden

}  // namespace

const char* limitCode(Limit l) {
  switch (l) {
    case Limit::None: return "hidden";
    case Limit::NoIndependentCompute: return "no-independent-compute";
    case Limit::RingOrder: return "ring-order";
    case Limit::MaxInFlight: return "max-in-flight";
    case Limit::Window: return "window";
    case Limit::MemoryCap: return "memory-cap";
  }
  return "?";
}

RegionSchedule scheduleRegion(const std::vector<Op*>& region, const std::vector<double>& given_cost, const ScheduleOptions& opts) {
  RegionGraph g = buildRegionGraph(region, given_cost, opts.aliases, opts.facts, !opts.ring_reorder);
  const std::vector<double>& cost = given_cost.empty() && opts.facts ? g.cost : given_cost;
  const size_t n = g.n;
  RegionSchedule out;
  std::vector<uint32_t> original(n);
  for (uint32_t i = 0; i < n; ++i) original[i] = i;
  out.before_s = simulateOrder(g, original, cost, nullptr, region);

  std::vector<uint32_t> order;
  order.reserve(n);
  std::vector<uint8_t> inflight_blocked(n, 0);
  if (opts.window == 0) {
    order = original;
  } else {
    std::vector<uint32_t> indeg(n, 0);
    for (size_t i = 0; i < n; ++i) indeg[i] = g.pred_start[i + 1] - g.pred_start[i];
    std::vector<double> finish(n, 0);
    std::vector<uint8_t> done(n, 0), released(n, 0);
    // Ops a collective waits for first, then the highest bottom level, then program order; waiting
    // ops by the time their input arrives.
    using Avail = std::tuple<int, double, uint32_t>;          // (feeds no collective, -level, position)
    using Wait = std::tuple<double, int, double, uint32_t>;   // (ready time, ...Avail)
    std::priority_queue<Avail, std::vector<Avail>, std::greater<>> available;
    std::priority_queue<Wait, std::vector<Wait>, std::greater<>> waiting;
    // Ready collectives in the order the scheduler considers them (a collective issued leaves by
    // swapping with the last), and each ring's own; where each one sits in both.
    std::vector<uint32_t> ready_colls;                       // without ring_reorder, at most one per ring (the chain)
    std::vector<std::vector<uint32_t>> ready_of_ring(g.ring_count);
    std::vector<uint32_t> at_in_ready(n, 0), at_in_ring(n, 0);
    RingQueues ring_queues(g, cost, opts.ring_reorder);
    std::vector<std::deque<double>> inflight(g.ring_count);  // by ring index: end times, ascending
    std::vector<double> ring_free(g.ring_count, 0);
    // Ops by anchor (ScheduleOptions::window), so that the window's edge is one forward scan.
    std::vector<uint32_t> anchor(n), by_anchor(n);
    std::vector<uint32_t> per_anchor(n + 1, 0);
    for (uint32_t i = 0; i < n; ++i) {
      anchor[i] = i;
      if ((opts.facts ? opts.facts->phase(*region[i]) : phaseOf(*region[i])) == Phase::Optimize) {
        anchor[i] = 0;
        for (uint32_t k = g.pred_start[i]; k < g.pred_start[i + 1]; ++k) anchor[i] = std::max(anchor[i], g.pred[k]);
      }
      ++per_anchor[anchor[i] + 1];
    }
    for (size_t a = 0; a < n; ++a) per_anchor[a + 1] += per_anchor[a];
    for (uint32_t i = 0; i < n; ++i) by_anchor[per_anchor[anchor[i]]++] = i;
    std::vector<uint8_t> in_window(n, 0);
    double now = 0;
    size_t lo = 0, hi = 0;
    auto readyTime = [&](uint32_t i) {
      double r = 0;
      for (uint32_t k = g.pred_start[i]; k < g.pred_start[i + 1]; ++k) r = std::max(r, finish[g.pred[k]]);
      return r;
    };
    auto release = [&](uint32_t i) {
      released[i] = 1;
      if (g.ring[i] >= 0) {
        ring_queues.released(i);
        std::vector<uint32_t>& mine = ready_of_ring[g.ring_index[i]];
        at_in_ring[i] = uint32_t(mine.size());
        mine.push_back(i);
        at_in_ready[i] = uint32_t(ready_colls.size());
        return ready_colls.push_back(i);
      }
      double r = readyTime(i);
      if (r <= now) available.emplace(1 - g.feeds_coll[i], -g.level[i], i);
      else waiting.emplace(r, 1 - g.feeds_coll[i], -g.level[i], i);
    };
    auto complete = [&](uint32_t i) {
      done[i] = 1;
      order.push_back(i);
      for (uint32_t k = g.succ_start[i]; k < g.succ_start[i + 1]; ++k) {
        uint32_t s = g.succ[k];
        if (--indeg[s] == 0 && in_window[s]) release(s);
      }
    };
    while (order.size() < n) {
      while (lo < n && done[lo]) ++lo;
      size_t edge = std::min(n, lo + opts.window);
      for (; hi < n && anchor[by_anchor[hi]] < edge; ++hi) {
        uint32_t i = by_anchor[hi];
        in_window[i] = 1;
        if (indeg[i] == 0 && !released[i]) release(i);
      }
      // Issue every collective whose ring has room, as early as its inputs allow.
      bool any_issued = false;
      // The collective issued is the first of ready_colls that can go: each ring offers at most
      // one (RingQueues::candidate), so the rings are asked, not every ready collective. A ring
      // with max-in-flight collectives in flight marks its ready ones blocked (the explanations).
      for (bool issued = true; issued;) {
        issued = false;
        uint32_t best = RingQueues::kNone;
        double best_start = 0;
        for (uint32_t r = 0; r < ready_of_ring.size(); ++r) {
          const std::vector<uint32_t>& mine = ready_of_ring[r];
          if (mine.empty()) continue;
          auto& q = inflight[r];
          while (!q.empty() && q.front() <= now) q.pop_front();
          if (int64_t(q.size()) >= opts.max_in_flight) {
            for (uint32_t c : mine) inflight_blocked[c] = 1;
            continue;
          }
          RingQueues::Candidate cand = ring_queues.candidate(r, released);
          if (!ring_queues.reorders())  // every ready one is a head: the first in ready_colls
            for (uint32_t c : mine)
              if (cand.c == RingQueues::kNone || at_in_ready[c] < at_in_ready[cand.c]) cand.c = c;
          if (cand.c == RingQueues::kNone || (best != RingQueues::kNone && at_in_ready[cand.c] > at_in_ready[best])) continue;
          const double start = std::max({now, readyTime(cand.c), ring_free[r]});
          if (cand.turn == RingQueues::Turn::MayPass && !ring_queues.mayPass(cand.c, now, start, done, finish)) continue;
          best = cand.c;
          best_start = start;
        }
        if (best == RingQueues::kNone) break;
        const uint32_t c = best, r = g.ring_index[c];
        ring_queues.issued(c);
        finish[c] = ring_free[r] = best_start + cost[c];
        inflight[r].push_back(finish[c]);
        for (auto [list, at] : {std::pair{&ready_colls, &at_in_ready}, std::pair{&ready_of_ring[r], &at_in_ring}}) {
          const uint32_t moved = list->back();
          (*list)[(*at)[c]] = moved;
          (*at)[moved] = (*at)[c];
          list->pop_back();
        }
        complete(c);
        issued = any_issued = true;
      }
      if (order.size() == n) break;
      // Issuing may have completed the lowest unscheduled ops: move the window's edge first, or
      // the ops it now admits would be missing below.
      if (any_issued) continue;
      while (!waiting.empty() && std::get<0>(waiting.top()) <= now) {
        auto [r, f, l, i] = waiting.top();
        available.emplace(f, l, i);
        waiting.pop();
      }
      if (!available.empty()) {
        uint32_t i = std::get<2>(available.top());
        available.pop();
        finish[i] = now = now + cost[i];
        complete(i);
        continue;
      }
      // Nothing can run now: wait for the earliest collective result or ring slot.
      double next = waiting.empty() ? -1 : std::get<0>(waiting.top());
      for (uint32_t c : ready_colls) {
        const auto& q = inflight[g.ring_index[c]];
        if (!q.empty() && (next < 0 || q.front() < next)) next = q.front();
      }
      if (next < 0)
        throw std::logic_error("overlap scheduler: no op can be scheduled (" + std::to_string(order.size()) + " of " +
                               std::to_string(n) + ", lowest " + std::to_string(lo) + " " + std::string(region[lo]->type) +
                               " waits on " + std::to_string(indeg[lo]) + ")");
      now = std::max(now, next);
    }
  }
  out.after_s = simulateOrder(g, order, cost, &out.collectives, region);
  if (out.after_s > out.before_s) {  // never worse than the program's own order (in this model)
    order = original;
    out.collectives.clear();
    out.after_s = simulateOrder(g, order, cost, &out.collectives, region);
  }
  for (CollectiveOutcome& c : out.collectives) {
    if (c.exposed_s <= kHiddenSlack * c.cost_s) continue;
    size_t pos = c.region_pos;
    if (c.ring_wait_s >= 0.5 * c.exposed_s) c.limit = Limit::RingOrder;
    else if (inflight_blocked[pos]) c.limit = Limit::MaxInFlight;
    else c.limit = opts.window < n ? Limit::Window : Limit::NoIndependentCompute;
  }
  out.order.reserve(n);
  for (uint32_t i : order) out.order.push_back(region[i]);
  for (uint32_t i = 0; i < n && !out.changed; ++i) out.changed = order[i] != i;
  std::vector<int64_t> last_of_ring(g.ring_count, -1);  // by ring index: the original position issued last
  for (uint32_t i : order) {
    if (g.ring[i] < 0) continue;
    int64_t& last = last_of_ring[g.ring_index[i]];
    out.ring_order_changed = out.ring_order_changed || int64_t(i) < last;
    last = i;
  }
  return out;
}

}  // namespace spopt
