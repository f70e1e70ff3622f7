// The per-op facts cache (analysis/op_facts.h) against the readers it stands for, on generated
// jobs of both generated dialects; forget() after an edit; and the analyses that take the cache give what
// they give without it.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "analysis/collectives.h"
#include "analysis/happens_before.h"
#include "analysis/liveness.h"
#include "analysis/op_facts.h"
#include "analysis/simulate.h"
#include "gen/generate.h"
#include "io/loader.h"
#include "ops/op_view.h"

using namespace spopt;

namespace {

std::unique_ptr<Job> factsJob(gen::Model model, gen::Dialect dialect) {
  gen::GenOptions o;
  o.model = model;
  o.tp = 2;
  o.sequence_parallel = true;
  o.dialect = dialect;
  return loadJobFromText(gen::generateJobText(o), "gen.json");
}

}  // namespace

TEST_CASE("op facts equal what the readers give, op by op", "[analysis][op-facts]") {
  for (auto dialect : {gen::Dialect::Legacy, gen::Dialect::Current})
    for (auto model : {gen::Model::Mlp, gen::Model::Gpt, gen::Model::Llama}) {
      auto job = factsJob(model, dialect);
      OpFactsCache facts;
      size_t collectives = 0;
      for (const auto& p : job->programs)
        for (const auto& b : p->blocks)
          for (const Op& op : b->ops) {
            const OpFacts& f = facts.facts(op);
            CHECK(f.phase == phaseOf(op));
            CHECK(facts.streamName(f.stream) == op.executionStream());
            CHECK(f.has_events == (!eventsToWait(op).empty() || !eventToRecord(op).empty()));
            CHECK(f.has_sub_block == op.attrs.has("sub_block"));
            auto c = asCollective(op);
            const bool comm = c && communicates(*c);
            CHECK(f.communicates == comm);
            CHECK(facts.collective(op).has_value() == comm);
            if (comm) {
              ++collectives;
              const Collective k = *facts.collective(op);
              CHECK((k.kind == c->kind && k.ring_id == c->ring_id && k.reduce == c->reduce && k.root == c->root &&
                     k.dialect == c->dialect && k.in_slot == c->in_slot && k.out_slot == c->out_slot));
              CHECK(facts.comm(f).sig == signatureOf(op));
            }
            for (size_t i = 0; i < op.inputs.size(); ++i)
              CHECK(bool(f.shape_only_inputs >> i & 1) == !readsBuffer(op, op.inputs[i].name));
          }
      CHECK(collectives > 0);
    }
}

TEST_CASE("op facts: forget() re-reads an edited op", "[analysis][op-facts]") {
  auto job = factsJob(gen::Model::Gpt, gen::Dialect::Legacy);
  Op& op = job->programs[0]->blocks[0]->ops.front();
  OpFactsCache facts;
  REQUIRE(facts.streamName(facts.facts(op).stream) == "default");
  setExecutionStream(op, *job, "side");
  setEventToRecord(op, *job, "ev");
  CHECK(facts.streamName(facts.facts(op).stream) == "default");  // cached until forgotten
  facts.forget(op);
  CHECK(facts.streamName(facts.facts(op).stream) == "side");
  CHECK(facts.facts(op).has_events);
}

TEST_CASE("analyses given a facts cache equal those without", "[analysis][op-facts]") {
  for (auto dialect : {gen::Dialect::Legacy, gen::Dialect::Current}) {
    auto job = factsJob(gen::Model::Gpt, dialect);
    // A second stream and an event, so that the graph has cross-stream and event edges.
    Block& entry = *job->programs[0]->blocks[0];
    for (Op& op : entry.ops)
      if (auto c = asCollective(op); c && communicates(*c)) setExecutionStream(op, *job, "comm");
    const HardwareModel model = *presetModel("h100-nvlink");
    OpFactsCache facts(model);
    HappensBefore with(*job, &facts), without(*job);
    REQUIRE(with.nodes().size() == without.nodes().size());
    CHECK(with.edgeCount() == without.edgeCount());
    for (uint32_t i = 0; i < with.nodes().size(); ++i) {
      CHECK(with.nodes()[i].stream == without.nodes()[i].stream);
      // Stream 0 is "default", each name one stream.
      CHECK((with.nodes()[i].stream == 0) == (with.nodes()[i].op->executionStream() == "default"));
      CHECK(with.nodes()[i].collective == without.nodes()[i].collective);
      auto a = with.successors(i), b = without.successors(i);
      REQUIRE(a.size == b.size);
      for (size_t k = 0; k < a.size; ++k) CHECK((a.to[k] == b.to[k] && a.kind[k] == b.kind[k]));
    }
    for (size_t r = 0; r < with.ranks().size(); ++r) {
      CHECK(with.ranks()[r].streams == without.ranks()[r].streams);
      CHECK(std::set<std::string>(with.ranks()[r].streams.begin(), with.ranks()[r].streams.end()).size() == with.ranks()[r].streams.size());
    }
    CHECK(simulateStep(*job, facts).step_s == simulateStep(*job, model).step_s);
    for (const auto& p : job->programs) {
      Liveness a = computeProgramLiveness(*p, {true, &facts}), b = computeProgramLiveness(*p);
      CHECK(a.entry().release_after == b.entry().release_after);
      CHECK(a.entry().born_at == b.entry().born_at);
    }
  }
}
