#include "analysis/simulate.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/collectives.h"
#include "analysis/hang_check.h"
#include "analysis/p2p.h"
#include "analysis/happens_before.h"
#include "support/error.h"
#include "ir/json_pointer.h"

namespace spopt {

const RankTimeline* StepTimeline::slowest() const {
  const RankTimeline* best = nullptr;
  for (const RankTimeline& r : ranks)
    if (!best || r.end_s > best->end_s) best = &r;
  return best;
}

namespace {

constexpr uint32_t kNone = kNoNode;

// Timing of one node of the happens-before graph. One per op of the job, built twice per
// overlap-collectives run: the small fields go last, so the record is 48 bytes, not 64.
struct Node {
  double cost = 0, ready = 0, start = 0, end = 0;
  // A send or receive: the bytes it moves (its cost's bandwidth term), and whether it sends.
  double p2p_bytes = 0;
  uint32_t binding = kNone;  // the dependency that finished last (critical path)
  uint8_t phase = uint8_t(Phase::Unknown);  // a Phase (an int-sized enum)
  bool is_comm = false;
  bool p2p_send = false;
};
static_assert(sizeof(Node) <= 48);

// A member rank the file lacks never arrives: its collectives run when the ranks present reach
// them (counted as unpaired). A member that is present but issues fewer collectives on the ring
// would wait forever: the verifier rejects that, and so does this; so is a send or receive
// without its partner.
void throwIfUnpaired(const Job& job, const HappensBefore& graph) {
  if (!graph.unmatched().empty()) {
    const UnmatchedCollective& u = graph.unmatched().front();
    const Op& op = *graph.nodes()[graph.instances()[u.instance].members.front()].op;
    throw InputError(job.path, opPointer(op),
                     std::string(op.type) + " has no partner on " + std::to_string(u.present - graph.instances()[u.instance].members.size()) +
                         " member rank(s) of its ring: they issue fewer collectives on it");
  }
  if (!graph.unmatchedP2P().empty()) {
    const Op& op = *graph.nodes()[graph.unmatchedP2P().front()].op;
    throw InputError(job.path, opPointer(op), graph.describe(graph.unmatchedP2P().front()) + " has no partner: it waits forever");
  }
}

// Ops the walk could not run wait on each other across ranks: the cycle, named.
void throwIfCycle(const Job& job, const HappensBefore& graph, const HbProgress& progress) {
  if (progress.ran_count == graph.nodes().size()) return;
  HangCycle cycle = findHangCycle(graph, progress);
  throw InputError(job.path, cycle.pointer, cycle.message);
}

class Simulator {
 public:
  Simulator(const Job& job, OpFactsCache& facts, bool timelines)
      : job_(job), model_(facts.model()), facts_(facts), timelines_(timelines), graph_(job, &facts) {}

  StepTimeline run() {
    build();
    schedule();
    return collect();
  }

 private:
  void build() {
    for (const HbRank& r : graph_.ranks()) {
      RankTimeline rt;
      rt.rank = r.rank;
      for (const std::string& s : r.streams) rt.streams.push_back({s, {}});
      ranks_.push_back(std::move(rt));
    }
    nodes_.resize(graph_.nodes().size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const HbNode& g = graph_.nodes()[i];
      const OpFacts& f = facts_.facts(*g.op);
      nodes_[i].cost = facts_.cost(*g.op);
      nodes_[i].phase = uint8_t(f.phase);
      nodes_[i].is_comm = g.collective != kNone;
      if (const auto& p = facts_.comm(f).p2p; g.peer_rank >= 0 && p && p->tensor) {
        nodes_[i].p2p_bytes = double(p->tensor->byteSize().value_or(0));
        nodes_[i].p2p_send = p->kind == P2PKind::Send;
      }
    }
    throwIfUnpaired(job_, graph_);
    for (const CollectiveInstance& inst : graph_.instances()) {
      if (inst.p2p) continue;  // a pair or group, never the whole ring
      const ProcessGroup* g = job_.group(inst.ring_id);
      if (!g || inst.members.size() < g->ranks.size()) ++unpaired_;
    }
  }

  // A group of sends and receives (one instance) runs at once; a rank's concurrent sends share its
  // egress and its receives its ingress (on NVSwitch a GPU's NVLink bandwidth, 900 GB/s both ways
  // on the H100 SXM datasheet, is its own to the switch whatever the peers), so the group takes
  // the fixed cost once and the most bytes one rank sends, or receives, over the link bandwidth.
  // Members are in node order, one rank's together.
  double groupSeconds(const uint32_t* ids, size_t count) const {
    double fixed = 0, bytes = 0, sent = 0, received = 0;
    for (size_t i = 0; i < count; ++i) {
      const Node& n = nodes_[ids[i]];
      if (i > 0 && graph_.nodes()[ids[i]].rank_index != graph_.nodes()[ids[i - 1]].rank_index) sent = received = 0;
      if (n.p2p_bytes > 0) fixed = std::max(fixed, n.cost - n.p2p_bytes / model_.bus_bw);
      (n.p2p_send ? sent : received) += n.p2p_bytes;
      bytes = std::max({bytes, sent, received});
    }
    return bytes > 0 ? fixed + bytes / model_.bus_bw : 0;
  }

  // An op whose last dependency finished on another stream of its rank was blocked until then:
  // its stream's thread (replay runs a thread per stream) is woken, which takes the host's wake-up
  // (zero on the GPU presets, whose streams wait on events).
  double readyToStart(uint32_t id) const {
    const Node& n = nodes_[id];
    if (n.binding == kNone || model_.wake_s == 0) return n.ready;
    const HbNode& me = graph_.nodes()[id];
    const HbNode& by = graph_.nodes()[n.binding];
    return by.rank_index == me.rank_index && by.stream != me.stream ? n.ready + model_.wake_s : n.ready;
  }

  // A collective's members start together, when the last is ready, and take the longest cost.
  void schedule() {
    auto start = [&](const uint32_t* ids, size_t count) {
      double begin = 0, cost = 0;
      for (size_t i = 0; i < count; ++i) {
        begin = std::max(begin, readyToStart(ids[i]));
        cost = std::max(cost, nodes_[ids[i]].cost);
      }
      if (count > 0 && graph_.nodes()[ids[0]].peer_rank >= 0) cost = groupSeconds(ids, count);
      for (size_t i = 0; i < count; ++i) {
        nodes_[ids[i]].start = begin;
        nodes_[ids[i]].end = begin + cost;
      }
    };
    auto reach = [&](uint32_t from, uint32_t to) {
      Node& s = nodes_[to];
      if (nodes_[from].end >= s.ready) {
        s.ready = nodes_[from].end;
        s.binding = from;
      }
    };
    throwIfCycle(job_, graph_, graph_.walk(start, reach));
  }

  StepTimeline collect() {
    StepTimeline t;
    t.model = model_.name;
    t.unpaired_collectives = int64_t(unpaired_);
    std::vector<double> stream_end;
    size_t i = 0;
    for (size_t ri = 0; ri < ranks_.size(); ++ri) {
      RankTimeline& rt = ranks_[ri];
      stream_end.assign(rt.streams.size(), 0);
      for (; i < nodes_.size() && graph_.nodes()[i].rank_index == ri; ++i) {
        const Node& n = nodes_[i];
        const HbNode& g = graph_.nodes()[i];
        if (timelines_) rt.streams[g.stream].intervals.push_back({n.start, n.end, g.op, g.position});
        rt.end_s = std::max(rt.end_s, n.end);
        double dur = n.end - n.start;
        PhaseTimes& ph = rt.phases[size_t(n.phase)];
        for (PhaseTimes* p : {&ph, &rt.total}) {
          if (p->first_start < 0 || n.start < p->first_start) p->first_start = n.start;
          p->last_end = std::max(p->last_end, n.end);
          (n.is_comm ? p->comm_s : p->compute_s) += dur;
        }
        if (g.stream == 0) {
          // The compute stream idles from its previous op's end to this op's start; the wait is
          // exposed communication when a collective made it (the binding dependency, or this op
          // itself waiting for its peers), and a collective on this stream is exposed whole. The
          // wait counts in the collective's phase, not the waiting op's: an update that waits for
          // a backward all-reduce exposes backward communication.
          double gap = std::max(0.0, n.start - stream_end[0]);
          double exposed = 0;
          size_t exposed_phase = n.phase;
          // Sends and receives of one group run at once on the stream: count the time once.
          if (n.is_comm) exposed = gap + std::max(0.0, n.end - std::max(n.start, stream_end[0]));
          else if (n.binding != kNone && nodes_[n.binding].is_comm) exposed = gap, exposed_phase = nodes_[n.binding].phase;
          rt.phases[exposed_phase].exposed_s += exposed;
          rt.total.exposed_s += exposed;
        }
        stream_end[g.stream] = std::max(stream_end[g.stream], n.end);
      }
      t.step_s = std::max(t.step_s, rt.end_s);
    }
    if (timelines_) criticalPath(t);
    t.ranks = std::move(ranks_);
    return t;
  }

  void criticalPath(StepTimeline& t) {
    uint32_t cur = kNone;
    for (uint32_t i = 0; i < nodes_.size(); ++i)
      if (cur == kNone || nodes_[i].end > nodes_[cur].end) cur = i;
    std::vector<CriticalItem> path;
    while (cur != kNone) {
      uint32_t from = cur;
      if (uint32_t c = graph_.nodes()[cur].collective; c != kNone) {  // the member that arrived last started it
        for (uint32_t m : graph_.instances()[c].members)
          if (nodes_[m].ready >= nodes_[from].ready) from = m;
      }
      const Node& f = nodes_[from];
      const HbNode& fg = graph_.nodes()[from];
      double wait = f.binding == kNone ? f.start : f.start - nodes_[f.binding].end;
      path.push_back({ranks_[fg.rank_index].rank, fg.op, f.end - f.start, std::max(0.0, wait)});
      cur = f.binding;
    }
    std::reverse(path.begin(), path.end());
    t.critical_path = std::move(path);
  }

  const Job& job_;
  const HardwareModel& model_;
  OpFactsCache& facts_;
  const bool timelines_;
  HappensBefore graph_;
  std::vector<Node> nodes_;  // by graph node
  std::vector<RankTimeline> ranks_;
  size_t unpaired_ = 0;
};

}  // namespace

StepTimeline simulateStep(const Job& job, OpFactsCache& facts, bool timelines) { return Simulator(job, facts, timelines).run(); }

void checkSchedulable(const Job& job, OpFactsCache& facts) {
  HappensBefore graph(job, &facts);
  throwIfUnpaired(job, graph);
  throwIfCycle(job, graph, graph.walk([](const uint32_t*, size_t) {}, [](uint32_t, uint32_t) {}));
}

StepTimeline simulateStep(const Job& job, const HardwareModel& model) {
  OpFactsCache facts(model);
  return simulateStep(job, facts);
}

}  // namespace spopt
