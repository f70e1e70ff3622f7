// Every journaled pass records each op and var it adds, erases or changes: the verifier after it
// checks only those (docs/passes.md), so an edit the journal misses would go unchecked. Each
// built-in pass runs here on a generated job it rewrites, its journal attached, and every
// difference between the job before and after must be in the journal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "gen_jobs.h"
#include "io/loader.h"
#include "analysis/op_facts.h"
#include "passes/pass_manager.h"
#include "passes/registry.h"
#include "verify/verifier.h"

using namespace spopt;

namespace {

std::string opText(const Op& op) {
  std::string s(op.type);
  for (const std::vector<Slot>* slots : {&op.inputs, &op.outputs}) {
    s += '|';
    for (const Slot& sl : *slots) {
      s += std::string(sl.name) + ':';
      for (const Arg& a : sl.args) s += std::string(a.name) + ',';
      s += ';';
    }
  }
  return s + '|' + op.attrs.toJson() + '|' + (op.hasDistAttr() ? op.dist_attr.toJson() : "");
}

std::string varText(const Var& v) {
  std::string s = std::string(v.name) + '|' + std::to_string(int(v.dtype)) + '|' + (v.persistable ? "p" : "") + (v.removed ? "r" : "");
  for (int64_t d : v.shape) s += std::to_string(d) + ',';
  return s + '|' + (v.hasDistAttr() ? v.dist_attr.toJson() : "");
}

// What a job holds, by program position and stable id (ids are never reused).
struct Snapshot {
  struct OpState {
    std::string text;
    const Op* address;
  };
  std::vector<std::map<uint32_t, OpState>> ops;
  std::vector<std::map<uint32_t, std::string>> vars;
  std::vector<std::vector<std::vector<uint32_t>>> order;  // [program][block]: op ids in block order

  explicit Snapshot(const Job& job) {
    for (const auto& p : job.programs) {
      auto& ops_here = ops.emplace_back();
      auto& vars_here = vars.emplace_back();
      auto& order_here = order.emplace_back();
      for (const auto& b : p->blocks) {
        auto& ids = order_here.emplace_back();
        for (const Op& op : b->ops) {
          ops_here[op.id] = {opText(op), &op};
          ids.push_back(op.id);
        }
        for (const auto& v : b->vars) vars_here[v->id] = varText(*v);
      }
    }
  }
};

// Each difference between `before` and `job` the journal does not record, as a line.
std::vector<std::string> unjournaled(const Snapshot& before, const Job& job, const EditJournal& j) {
  auto has = [](const auto& list, const auto* x) { return std::find(list.begin(), list.end(), x) != list.end(); };
  std::vector<std::string> missed;
  const Snapshot after(job);
  std::set<const Op*> live;
  for (const auto& ops : after.ops)
    for (const auto& [id, now] : ops) live.insert(now.address);
  for (const auto& p : job.programs) {
    const size_t pi = p->position;
    const std::string rank = "rank " + std::to_string(p->rank) + ": ";
    for (const auto& [id, now] : after.ops[pi]) {
      auto was = before.ops[pi].find(id);
      const Op* op = now.address;
      if (was == before.ops[pi].end() && !has(j.ops, op)) missed.push_back(rank + "new op " + now.text);
      else if (was != before.ops[pi].end() && was->second.text != now.text && !has(j.ops, op) && !has(j.execution, op))
        missed.push_back(rank + "changed op " + was->second.text + " -> " + now.text);
    }
    for (const auto& [id, was] : before.ops[pi]) {
      if (after.ops[pi].count(id)) continue;
      // Erased: recorded so, unless a later insert (on any rank) reused its address; that op is
      // then recorded.
      const bool reused = live.count(was.address) && has(j.ops, was.address);
      if (!j.erased.contains(was.address) && !reused) missed.push_back(rank + "erased op " + was.text);
    }
    for (const auto& b : p->blocks)
      for (const auto& v : b->vars) {
        auto was = before.vars[pi].find(v->id);
        if ((was == before.vars[pi].end() || was->second != varText(*v)) && !has(j.vars, v.get()))
          missed.push_back(rank + "new or changed var " + varText(*v));
      }
    // The ops that were there before and still are: a different order needs a recorded move.
    for (size_t bi = 0; bi < p->blocks.size(); ++bi) {
      std::vector<uint32_t> kept_before, kept_after;
      for (uint32_t id : before.order[pi][bi])
        if (after.ops[pi].count(id)) kept_before.push_back(id);
      for (uint32_t id : after.order[pi][bi])
        if (before.ops[pi].count(id)) kept_after.push_back(id);
      bool moved_here = false;
      for (const Op* op : j.moved) moved_here = moved_here || op->block == p->blocks[bi].get();
      if (kept_before != kept_after && !moved_here) missed.push_back(rank + "ops reordered in block " + std::to_string(bi) + ", no move recorded");
    }
  }
  return missed;
}


// Runs `text` (one pass) on `job` with a journal attached; returns what the journal missed.
std::vector<std::string> runJournaled(Job& job, const std::string& text, bool* changed) {
  Pipeline pipeline = parsePipeline(text, PassRegistry::builtin());
  REQUIRE(pipeline.size() == 1);
  const ConfiguredPass& cp = pipeline.front();
  const Snapshot before(job);
  EditJournal journal;
  job.journal = &journal;
  PassContext ctx(false, &cp.info->statistics, true);
  *changed = cp.info->create(cp.options)->run(job, ctx);
  job.journal = nullptr;
  return unjournaled(before, job, journal);
}

struct Case {
  std::string pass, before;  // the pass, and the pipeline that prepares its input
  int64_t tp;
};

// Each built-in pass on a job it rewrites.
std::vector<Case> journaledCases() {
  return {
      {"fuse-allreduce-split", "", 2},
      {"regather-activations", "fuse-allreduce-split", 2},
      {"overlap-collectives", "fuse-allreduce-split,regather-activations", 2},
      {"overlap-collectives", "fuse-allreduce-split,regather-activations", 4},
      {"split-matmul-grad", "", 2},
      {"decompose-collective-matmul{mode=always}", "fuse-allreduce-split", 2},
      {"decompose-collective-matmul{mode=always,phases=all}", "fuse-allreduce-split", 4},
      {"recompute-activations", "fuse-allreduce-split", 2},
  };
}

// What `a` and `b` read of `op` differs in (empty: nothing).
std::string factsDiffer(OpFactsCache& a, OpFactsCache& b, const Op& op) {
  const OpFacts &x = a.facts(op), &y = b.facts(op);
  if (x.phase != y.phase) return "phase";
  if (a.streamName(x.stream) != b.streamName(y.stream)) return "stream";
  if (x.shape_only_inputs != y.shape_only_inputs || x.many_inputs != y.many_inputs) return "shape-only inputs";
  if (x.has_sub_block != y.has_sub_block || x.has_events != y.has_events) return "sub-block or events";
  if (x.communicates != y.communicates || x.kernel_comm != y.kernel_comm || x.kernel_only != y.kernel_only) return "role";
  const CommFacts &cx = a.comm(x), &cy = b.comm(y);
  const Collective &kx = cx.coll, &ky = cy.coll;
  if (kx.kind != ky.kind || kx.reduce != ky.reduce || kx.root != ky.root || kx.dialect != ky.dialect || kx.in_slot != ky.in_slot ||
      kx.out_slot != ky.out_slot)
    return "collective";
  if (kx.ring_id != ky.ring_id || !(cx.sig == cy.sig || (cx.sig.numel < 0 && cy.sig.numel < 0))) return "ring or signature";
  if (cx.p2p.has_value() != cy.p2p.has_value()) return "send or receive";
  return "";
}

}  // namespace

TEST_CASE("every journaled built-in pass records each op and var it adds, erases or changes", "[passes][verify]") {
  std::set<std::string> covered;
  for (const Case& c : journaledCases()) {
    INFO(c.pass << " after [" << c.before << "], tp " << c.tp);
    auto job = spopt::test::smallGptJob(c.tp);
    if (!c.before.empty()) REQUIRE(runPipeline(parsePipeline(c.before, PassRegistry::builtin()), *job).ok);
    bool changed = false;
    CHECK(runJournaled(*job, c.pass, &changed) == std::vector<std::string>{});
    CHECK(changed);  // a pass that edits nothing proves nothing here
    covered.insert(parsePipeline(c.pass, PassRegistry::builtin()).front().info->name);
  }
  for (const PassInfo* info : PassRegistry::builtin().all()) {
    INFO(info->name);
    CHECK(info->journaled);
    CHECK(covered.count(info->name));  // a new pass gets a case above
  }
}

TEST_CASE("the journal check sees an edit made around the journal", "[passes][verify]") {
  auto job = spopt::test::smallGptJob(2);
  const Snapshot before(*job);
  EditJournal journal;
  Op& op = job->program(1)->blocks[0]->ops.front();
  op.attrs.setRaw(job->editArena(), "op_namescope", "\"/elsewhere/\"");  // no edit function: not journaled
  const std::vector<std::string> missed = unjournaled(before, *job, journal);
  REQUIRE(missed.size() == 1);
  CHECK(missed[0].rfind("rank 1: changed op ", 0) == 0);
}

// The pass manager reads every op's facts once for the pipeline and brings them up to date from
// each pass's journal (PassContext::facts): after any built-in pass, what it holds must equal a
// fresh read of the job.
TEST_CASE("op facts read before a pass and refreshed from its journal equal a fresh read", "[passes][facts]") {
  for (const Case& c : journaledCases()) {
    INFO(c.pass << " after [" << c.before << "], tp " << c.tp);
    auto job = spopt::test::smallGptJob(c.tp);
    if (!c.before.empty()) REQUIRE(runPipeline(parsePipeline(c.before, PassRegistry::builtin()), *job).ok);
    OpFactsCache kept;
    kept.readAll(*job);
    bool changed = false;
    EditJournal journal;
    {
      Pipeline pipeline = parsePipeline(c.pass, PassRegistry::builtin());
      const ConfiguredPass& cp = pipeline.front();
      job->journal = &journal;
      PassContext ctx(false, &cp.info->statistics, true);
      changed = cp.info->create(cp.options)->run(*job, ctx);
      job->journal = nullptr;
    }
    REQUIRE(changed);
    kept.refresh(journal);
    OpFactsCache fresh;
    fresh.readAll(*job);
    std::vector<std::string> differ;
    for (const auto& p : job->programs)
      for (const auto& b : p->blocks)
        for (const Op& op : b->ops)
          if (std::string what = factsDiffer(kept, fresh, op); !what.empty())
            differ.push_back("rank " + std::to_string(p->rank) + " op " + std::to_string(op.id) + " (" + std::string(op.type) + "): " + what);
    CHECK(differ == std::vector<std::string>{});
  }
}
