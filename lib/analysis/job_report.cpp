#include "analysis/job_report.h"

#include <iterator>

#include "ops/op_def.h"

namespace spopt {

namespace {

RankReport analyzeRank(const Program& p, const HardwareModel& model) {
  RankReport r;
  r.rank = p.rank;
  const Job& job = *p.job;
  LayerNamer layers;
  for (const auto& b : p.blocks) {
    uint32_t position = 0;
    for (const Op& op : b->ops) {
      const std::string& layer = layers.next(op);
      uint32_t here = position++;
      ++r.ops;
      Phase phase = phaseOf(op);
      auto c = asCollective(op);
      if (c && communicates(*c)) {
        auto w = collectiveWireBytes(op, *c, job);
        if (!w) {
          ++r.unknown_size;
          continue;
        }
        CollectiveUse u{&op, here, c->kind, c->ring_id, w->group_size, phase, layer, w->payload, w->wire,
                        opCostSeconds(op, model)};
        r.comm.add(u.payload, u.wire, u.seconds);
        r.comm_by_kind[u.kind].add(u.payload, u.wire, u.seconds);
        r.comm_by_ring[u.ring].add(u.payload, u.wire, u.seconds);
        r.comm_by_phase[size_t(phase)].add(u.payload, u.wire, u.seconds);
        r.collectives.push_back(std::move(u));
        continue;
      }
      double f = opFlops(op);
      if (!resolveOp(op.type)) {
        ++r.uncatalogued[std::string(op.type)];
        r.uncatalogued_flops += f;
      }
      if (f == 0) continue;
      r.flops += f;
      r.flops_by_phase[size_t(phase)] += f;
      r.flops_by_layer[layer] += f;
    }
  }
  r.memory = profileMemory(p, 5);
  if (r.memory.peak_op >= 0)
    if (const Block* entry = entryBlockOf(p)) {
      auto it = entry->ops.begin();
      std::advance(it, r.memory.peak_op);
      r.peak_op = &*it;
    }
  r.activations = activationMemory(p);
  return r;
}

}  // namespace

JobReport analyzeJob(const Job& job, const HardwareModel& model, const AnalyzeOptions& opts) {
  JobReport rep;
  rep.path = job.path;
  rep.model = model;
  rep.world_size = job.world_size;
  for (const auto& p : job.programs) rep.ranks.push_back(analyzeRank(*p, model));
  if (opts.simulate) {
    rep.timeline = simulateStep(job, model);
    rep.simulated = true;
  }
  return rep;
}

}  // namespace spopt
