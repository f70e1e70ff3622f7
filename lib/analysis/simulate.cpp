#include "analysis/simulate.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "analysis/collectives.h"
#include "analysis/ring_order.h"
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

constexpr uint32_t kNone = UINT32_MAX;

struct Node {
  const Op* op = nullptr;
  uint32_t rank_index = 0;
  uint32_t stream = 0;
  uint32_t pending = 0;
  uint32_t binding = kNone;    // the dependency that finished last (critical path)
  uint32_t collective = kNone; // index into Simulator::instances_
  uint32_t position = 0;       // index in its block
  double cost = 0, ready = 0, start = 0, end = 0;
  Phase phase = Phase::Unknown;
  bool is_comm = false;
};

// The k-th collective of a ring on every member rank: it starts when the last member arrives.
struct Instance {
  std::vector<uint32_t> members;  // nodes, one per member rank that has a program
  uint32_t arrived = 0;
};

class Simulator {
 public:
  Simulator(const Job& job, const HardwareModel& m) : job_(job), model_(m) {}

  StepTimeline run() {
    build();
    schedule();
    return collect();
  }

 private:
  void addEdge(uint32_t from, uint32_t to) {
    if (from == kNone || from == to) return;
    edges_.push_back({from, to});
  }

  void build() {
    // Collective #k of a ring on every member rank (the shared ring alignment) is one instance.
    RingOrder rings(job_);
    std::map<std::pair<int64_t, size_t>, uint32_t> instance_of;  // (ring, k) -> instance
    for (size_t ri = 0; ri < job_.programs.size(); ++ri) {
      const Program& p = *job_.programs[ri];
      RankTimeline rt;
      rt.rank = p.rank;
      rt.streams.push_back({"default", {}});
      std::map<std::string, uint32_t> stream_index{{"default", 0}};
      std::vector<uint32_t> last_writer(p.next_var_id + 1, kNone);
      std::vector<uint32_t> stream_tail{kNone};
      std::unordered_map<std::string, uint32_t> recorder;
      for (const auto& b : p.blocks) {
        uint32_t position = 0;
        for (const Op& op : b->ops) {
          uint32_t id = uint32_t(nodes_.size());
          Node n;
          n.op = &op;
          n.position = position++;
          n.rank_index = uint32_t(ri);
          n.phase = phaseOf(op);
          std::string s = op.executionStream();
          auto [it, fresh] = stream_index.try_emplace(s, uint32_t(rt.streams.size()));
          if (fresh) {
            rt.streams.push_back({s, {}});
            stream_tail.push_back(kNone);
          }
          n.stream = it->second;
          n.cost = opCostSeconds(op, model_);
          if (auto place = rings.placeOf(op)) {
            n.is_comm = true;
            auto [inst, made] = instance_of.try_emplace({place->ring_id, place->k}, uint32_t(instances_.size()));
            if (made) instances_.emplace_back();
            instances_[inst->second].members.push_back(id);
            n.collective = inst->second;
          }
          addEdge(stream_tail[n.stream], id);
          stream_tail[n.stream] = id;
          for (const Slot& sl : op.inputs)
            for (const Arg& a : sl.args)
              if (a.var && a.var->id < last_writer.size()) addEdge(last_writer[a.var->id], id);
          for (const std::string& e : eventsToWait(op)) {
            auto r = recorder.find(e);
            if (r != recorder.end()) addEdge(r->second, id);
          }
          for (const Slot& sl : op.outputs)
            for (const Arg& a : sl.args)
              if (a.var && a.var->id < last_writer.size()) last_writer[a.var->id] = id;
          if (std::string e = eventToRecord(op); !e.empty()) recorder[e] = id;
          nodes_.push_back(n);
        }
      }
      ranks_.push_back(std::move(rt));
    }
    // A member rank the file lacks never arrives: its collectives run when the ranks present
    // reach them (counted as unpaired). A member that is present but issues fewer collectives on
    // the ring would wait forever: the verifier rejects that, and so does this.
    for (size_t k = 0; k < instances_.size(); ++k) {
      const Instance& inst = instances_[k];
      const Op& op = *nodes_[inst.members.front()].op;
      const ProcessGroup* g = job_.group(asCollective(op)->ring_id);
      size_t present = 0;
      if (g)
        for (int64_t r : g->ranks) present += job_.program(r) ? 1 : 0;
      if (inst.members.size() < present)
        throw InputError(job_.path, opPointer(op),
                         std::string(op.type) + " has no partner on " + std::to_string(present - inst.members.size()) +
                             " member rank(s) of its ring: they issue fewer collectives on it");
      if (!g || inst.members.size() < g->ranks.size()) ++unpaired_;
    }
    // Adjacency in CSR form.
    offsets_.assign(nodes_.size() + 1, 0);
    for (auto [from, to] : edges_) {
      ++offsets_[from + 1];
      ++nodes_[to].pending;
    }
    for (size_t i = 0; i < nodes_.size(); ++i) offsets_[i + 1] += offsets_[i];
    succ_.resize(edges_.size());
    std::vector<uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
    for (auto [from, to] : edges_) succ_[fill[from]++] = to;
    edges_.clear();
    edges_.shrink_to_fit();
  }

  void finish(uint32_t id, std::vector<uint32_t>& ready) {
    Node& n = nodes_[id];
    ++done_;
    for (uint32_t k = offsets_[id]; k < offsets_[id + 1]; ++k) {
      Node& s = nodes_[succ_[k]];
      if (n.end >= s.ready) {
        s.ready = n.end;
        s.binding = id;
      }
      if (--s.pending == 0) ready.push_back(succ_[k]);
    }
  }

  void schedule() {
    std::vector<uint32_t> ready;
    for (uint32_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].pending == 0) ready.push_back(i);
    while (!ready.empty()) {
      uint32_t id = ready.back();
      ready.pop_back();
      Node& n = nodes_[id];
      if (n.collective == kNone) {
        n.start = n.ready;
        n.end = n.start + n.cost;
        finish(id, ready);
        continue;
      }
      Instance& inst = instances_[n.collective];
      if (++inst.arrived < inst.members.size()) continue;
      double start = 0, cost = 0;
      for (uint32_t m : inst.members) {
        start = std::max(start, nodes_[m].ready);
        cost = std::max(cost, nodes_[m].cost);
      }
      for (uint32_t m : inst.members) {
        nodes_[m].start = start;
        nodes_[m].end = start + cost;
      }
      for (uint32_t m : inst.members) finish(m, ready);
    }
    if (done_ < nodes_.size()) deadlock();
  }

  [[noreturn]] void deadlock() {
    // The first rank's first op that never ran, and the collective it waits for.
    for (const Node& n : nodes_) {
      if (n.pending == 0 && n.collective != kNone) {
        const Instance& inst = instances_[n.collective];
        for (uint32_t m : inst.members)
          if (nodes_[m].pending > 0) {
            const Op& other = *nodes_[m].op;
            throw InputError(job_.path, opPointer(*n.op),
                             std::string(n.op->type) + " on rank " + std::to_string(ranks_[n.rank_index].rank) +
                                 " waits for rank " + std::to_string(ranks_[nodes_[m].rank_index].rank) + "'s " +
                                 std::string(other.type) + " at " + opPointer(other) +
                                 ", which the rank's other collectives keep from running: the rings' issue orders form a cycle");
          }
      }
    }
    throw InputError(job_.path, "", "the ops' dependencies form a cycle: no order runs them all");
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
      for (; i < nodes_.size() && nodes_[i].rank_index == ri; ++i) {
        const Node& n = nodes_[i];
        rt.streams[n.stream].intervals.push_back({n.start, n.end, n.op, n.position});
        rt.end_s = std::max(rt.end_s, n.end);
        double dur = n.end - n.start;
        PhaseTimes& ph = rt.phases[size_t(n.phase)];
        for (PhaseTimes* p : {&ph, &rt.total}) {
          if (p->first_start < 0 || n.start < p->first_start) p->first_start = n.start;
          p->last_end = std::max(p->last_end, n.end);
          (n.is_comm ? p->comm_s : p->compute_s) += dur;
        }
        if (n.stream == 0) {
          // The compute stream idles from its previous op's end to this op's start; the wait is
          // exposed communication when a collective made it (the binding dependency, or this op
          // itself waiting for its peers), and a collective on this stream is exposed whole. The
          // wait counts in the collective's phase, not the waiting op's: an update that waits for
          // a backward all-reduce exposes backward communication.
          double gap = std::max(0.0, n.start - stream_end[0]);
          double exposed = 0;
          Phase exposed_phase = n.phase;
          if (n.is_comm) exposed = gap + dur;
          else if (n.binding != kNone && nodes_[n.binding].is_comm) exposed = gap, exposed_phase = nodes_[n.binding].phase;
          rt.phases[size_t(exposed_phase)].exposed_s += exposed;
          rt.total.exposed_s += exposed;
        }
        stream_end[n.stream] = std::max(stream_end[n.stream], n.end);
      }
      t.step_s = std::max(t.step_s, rt.end_s);
    }
    criticalPath(t);
    t.ranks = std::move(ranks_);
    return t;
  }

  void criticalPath(StepTimeline& t) {
    uint32_t cur = kNone;
    for (uint32_t i = 0; i < nodes_.size(); ++i)
      if (cur == kNone || nodes_[i].end > nodes_[cur].end) cur = i;
    std::vector<CriticalItem> path;
    while (cur != kNone) {
      const Node& n = nodes_[cur];
      uint32_t from = cur;
      if (n.collective != kNone) {  // the member that arrived last started it
        for (uint32_t m : instances_[n.collective].members)
          if (nodes_[m].ready >= nodes_[from].ready) from = m;
      }
      const Node& f = nodes_[from];
      double wait = f.binding == kNone ? f.start : f.start - nodes_[f.binding].end;
      path.push_back({ranks_[f.rank_index].rank, f.op, f.end - f.start, std::max(0.0, wait)});
      cur = f.binding;
    }
    std::reverse(path.begin(), path.end());
    t.critical_path = std::move(path);
  }

  const Job& job_;
  const HardwareModel& model_;
  std::vector<Node> nodes_;
  std::vector<Instance> instances_;
  std::vector<std::pair<uint32_t, uint32_t>> edges_;
  std::vector<uint32_t> offsets_, succ_;
  std::vector<RankTimeline> ranks_;
  size_t done_ = 0, unpaired_ = 0;
};

}  // namespace

StepTimeline simulateStep(const Job& job, const HardwareModel& model) { return Simulator(job, model).run(); }

}  // namespace spopt
