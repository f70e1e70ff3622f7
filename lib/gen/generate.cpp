#include "gen/generate.h"

#include "gen/json_emitter.h"
#include "gen/models.h"
#include "gen/program_builder.h"
#include "gen/topology.h"
#include "gen/training.h"
#include "io/atomic_file.h"

namespace spopt::gen {
namespace {

void group(JsonEmitter& out, bool& first, int64_t ring, const std::vector<int64_t>& ranks) {
  out.raw(first ? "\n    {\"ring_id\":" : ",\n    {\"ring_id\":");
  first = false;
  out.integer(ring);
  out.raw(",\"ranks\":");
  out.intArray(ranks);
  out.raw('}');
}

// One phase of one rank's block: its vars or its ops, one per line.
size_t emitBlockPart(JsonEmitter& out, const GenOptions& o, const Topology& topo, int64_t rank, ProgramBuilder::Phase phase) {
  ProgramBuilder b(out, topo, phase, "\n            ");
  switch (o.model) {
    case Model::Mlp: emitMlp(b, o, rank); break;
    case Model::Gpt: emitGpt(b, o, rank); break;
    case Model::Llama: emitLlama(b, o, rank); break;
  }
  b.finish();
  if (b.written()) out.raw("\n          ");
  return b.written();
}

GenStats emitJob(const GenOptions& o, JsonEmitter& out) {
  checkOptions(o);
  const Topology topo(o.tp, o.dp);
  GenStats stats;
  stats.ranks = topo.world();
  out.raw("{\n  \"format\": \"sp-opt.program\",\n  \"version\": 1,\n  \"world_size\": ");
  out.integer(topo.world());
  out.raw(",\n  \"process_groups\": [");
  bool first = true;
  if (topo.hasTpRings())
    for (int64_t d = 0; d < o.dp; ++d) group(out, first, topo.tpRing(d), topo.tpRingRanks(d));
  if (topo.hasDpRings())
    for (int64_t t = 0; t < o.tp; ++t) group(out, first, topo.dpRing(t), topo.dpRingRanks(t));
  out.raw(first ? "]" : "\n  ]");
  out.raw(",\n  \"programs\": [");
  for (int64_t rank = 0; rank < topo.world(); ++rank) {
    out.raw(rank ? ",\n    {" : "\n    {");
    out.raw("\n      \"rank\": ");
    out.integer(rank);
    out.raw(",\n      \"fetch\": [");
    out.string(kLossName);
    out.raw("],\n      \"blocks\": [\n        {\n          \"idx\": 0,\n          \"parent_idx\": -1,\n          \"vars\": [");
    stats.vars += int64_t(emitBlockPart(out, o, topo, rank, ProgramBuilder::Phase::Vars));
    out.raw("],\n          \"ops\": [");
    stats.ops += int64_t(emitBlockPart(out, o, topo, rank, ProgramBuilder::Phase::Ops));
    out.raw("]\n        }\n      ]\n    }");
    out.maybeFlush();
  }
  out.raw("\n  ]\n}\n");
  return stats;
}

}  // namespace

GenStats generateJob(const GenOptions& o, AtomicFile& file) {
  JsonEmitter out(&file);
  GenStats stats = emitJob(o, out);
  out.flush();
  return stats;
}

std::string generateJobText(const GenOptions& o) {
  JsonEmitter out(nullptr);
  emitJob(o, out);
  return out.take();
}

}  // namespace spopt::gen
