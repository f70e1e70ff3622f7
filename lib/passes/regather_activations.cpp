// Pass regather-activations: keep a column-parallel linear's sequence shard, not its gathered input,
// for backward, and all-gather the shard again right before backward needs it (Megatron-LM's and
// Paddle's sequence-parallel memory trade, as a static rewrite of every rank at once). The matcher
// (regather_match.h) finds forward all-gathers whose output backward reads by buffer and whose
// shard is intact until then; this file decides, on every member rank of the ring alike, and
// rewrites.
//
// Decision, per aligned ring position k (analysis/ring_order.h), all-or-none on the ring's members:
//  1. every member's collective #k is a matching forward all-gather (agreeAt), else "peer-refused";
//  2. every member's re-gather lands after the same number of ring collectives, else "ring-order";
//  3. min-bytes; in mode=auto, the memory model (regather_memory.h): applied on every member, kept
//     only when no member's peak rises and at least one member's peak drops ("peak-not-lowered"),
//     largest gathered tensors first; with budget=, positions stop once every member is under it;
//  4. the final insertion set is checked with RingOrder::checkInsertions per ring; a divergence
//     (not expected after step 2) refuses every re-gather of that ring.
// The rewrite (rewriteRegather): same type, attrs and dist_attr (so execution_stream) as the forward
// all-gather, op_role backward, a fresh `G@regather` in the insertion block read by G's backward
// buffer readers (shape-only readers keep G).
//
// Linear: one walk over the ops, O(uses) per candidate, O(ring length) per ring check; auto adds
// O(ops) per rank (one profile) and O(log ops) per tentative decision.
#include <algorithm>

#include "analysis/memory.h"
#include "analysis/ring_order.h"
#include "ops/op_builder.h"
#include "passes/builtin_passes.h"
#include "passes/regather_match.h"
#include "passes/regather_memory.h"

namespace spopt {
namespace {

struct Candidate {
  Program* program = nullptr;
  Op* ag = nullptr;
  RegatherResult res;
  size_t op_index = 0;
  bool regather = false;
  std::string code, reason, note_code, note;
  bool ok() const { return res.match.has_value(); }
  void refuse(std::string c, std::string r) { regather = false, code = std::move(c), reason = std::move(r); }
};

struct Position {  // one aligned ring position: the candidate on each member
  int64_t ring_id = 0;
  size_t k = 0;
  int64_t bytes = 0;
  std::vector<Candidate*> members;
};

struct RankMemory {
  Liveness live;
  std::unique_ptr<LiveBytesTree> tree;
  int64_t peak_before = 0;
};

class RegatherActivations final : public Pass {
 public:
  struct Options {
    std::string mode = "always";
    int64_t budget = 0;
    int64_t min_bytes = 0;
  };
  explicit RegatherActivations(Options o) : opts_(std::move(o)) {}

  bool run(Job& job, PassContext& ctx) override {
    if (opts_.mode == "off") return false;
    const bool explaining = ctx.explaining();
    cands_.clear(), memory_.clear();
    RingOrder rings(job);
    cand_of_.assign(job.programs.size(), {});
    for (auto& p : job.programs) {
      BlockOwners owners(*p);
      cand_of_[p->position].assign(p->next_op_id, -1);
      for (auto& b : p->blocks)
        for (Op& op : b->ops) {
          auto coll = asCollective(op);
          if (!coll || coll->kind != CollectiveKind::AllGather) continue;
          Candidate c;
          c.program = p.get();
          c.ag = &op;
          c.res = matchRegather(op, *coll, owners, explaining);
          c.op_index = b->indexOf(&op);
          if (!c.res.candidate) continue;
          c.code = c.res.refusal.code;
          c.reason = c.res.refusal.reason;
          cand_of_[p->position][op.id] = int32_t(cands_.size());
          cands_.push_back(std::move(c));
        }
    }
    std::vector<Position> positions;
    for (const Ring& ring : rings.rings())
      for (size_t k = 0; k < ring.length(); ++k) decidePosition(ring, k, positions);
    if (opts_.mode == "auto") decideByMemory(positions);
    checkRings(rings, positions);
    int64_t freed = 0, regathers = 0, kept = 0;
    for (Candidate& c : cands_) {
      ctx.countCandidate();
      ExplainRecord r;
      r.rank = c.program->rank;
      r.block_idx = c.ag->block->idx;
      r.op_index = c.op_index;
      r.op_type = std::string(c.ag->type);
      r.code = c.code;
      r.reason = c.reason;
      if (!c.regather) {
        if (r.code.empty()) r.code = "no-ring", r.reason = "its ring_id names no ring of the job's collective order";
        ctx.refuse(std::move(r));
        continue;
      }
      ctx.countRewritten();
      ++regathers;
      freed += varBytes(*c.res.match->gathered);
      noteShardKept(c, kept);
      if (!c.note_code.empty()) {
        r.code = c.note_code;
        r.reason = c.note;
        ctx.note(std::move(r));
      }
    }
    if (regathers == 0) return false;
    int64_t peak_before = 0, peak_after = 0;
    for (auto& p : job.programs) peak_before = std::max(peak_before, memoryOf(*p).peak_before);
    for (Candidate& c : cands_)
      if (c.regather) rewriteRegather(*c.res.match);
    for (auto& p : job.programs) peak_after = std::max(peak_after, profileMemory(*p, 0).peak_bytes);
    ctx.stats.figures["regathers"] += regathers;
    ctx.stats.figures["gathered-bytes-released-early"] += freed;
    ctx.stats.figures["shard-bytes-kept-alive"] += kept;
    ctx.stats.figures["max-rank-peak-bytes-before"] = peak_before;
    ctx.stats.figures["max-rank-peak-bytes-after"] = peak_after;
    return true;
  }

 private:
  Options opts_;
  std::vector<Candidate> cands_;
  std::vector<std::vector<int32_t>> cand_of_;  // [program position][op id] -> index in cands_, or -1
  std::map<size_t, RankMemory> memory_;         // program position -> its liveness and memory model

  Candidate* candidateAt(const Op& op) {
    int32_t i = cand_of_[op.block->program->position][op.id];
    return i < 0 ? nullptr : &cands_[size_t(i)];
  }

  // Issue-order slot of an insertion before `before`: how many of the member's ring ops precede it.
  static size_t slotOf(const RingIssuer& m, const Op* before) {
    auto key = [](const Op* o) { return std::make_pair(o->block->position, o->block->indexOf(o)); };
    auto at = key(before);
    return size_t(std::lower_bound(m.ops.begin(), m.ops.end(), at, [&](const Op* o, const auto& v) { return key(o) < v; }) -
                  m.ops.begin());
  }

  void decidePosition(const Ring& ring, size_t k, std::vector<Position>& positions) {
    Position pos{ring.ring_id, k, 0, {}};
    for (const RingIssuer& m : ring.members)
      if (k < m.ops.size())
        if (Candidate* c = candidateAt(*m.ops[k])) pos.members.push_back(c);
    if (pos.members.empty()) return;
    const std::string where = "collective #" + std::to_string(k) + " of ring " + std::to_string(ring.ring_id);
    auto refuseAll = [&](const std::string& code, const std::string& reason) {
      for (Candidate* c : pos.members)
        if (c->ok()) c->refuse(code, reason);
    };
    if (!ring.group) return refuseAll("no-group", "the job declares no process group for ring " + std::to_string(ring.ring_id));
    Agreement a = agreeAt(ring, k, [&](const RingIssuer&, const Op& op) -> std::optional<std::string> {
      Candidate* c = candidateAt(op);
      if (!c) return "its " + where + " is " + std::string(op.type) + ", not a forward all-gather";
      if (!c->ok()) return c->reason;
      return std::nullopt;
    });
    if (!a.agree)
      return refuseAll("peer-refused", "rank " + std::to_string(a.blocker_rank) + " cannot re-gather " + where + " (" + a.why +
                                           "), so no rank of " + ringText(*ring.group) + " does");
    // Every member's re-gather must land at the same place of the ring's order.
    size_t ref_slot = slotOf(ring.members.front(), pos.members.front()->res.match->insert_before);
    for (size_t i = 1; i < ring.members.size(); ++i) {
      size_t slot = slotOf(ring.members[i], pos.members[i]->res.match->insert_before);
      if (slot != ref_slot)
        return refuseAll("ring-order", "ring order would differ on rank " + std::to_string(ring.members[i].program->rank) +
                                           ": its re-gather of " + where + " would follow " + std::to_string(slot) +
                                           " ring collectives, rank " + std::to_string(ring.members.front().program->rank) +
                                           "'s " + std::to_string(ref_slot));
    }
    for (Candidate* c : pos.members) pos.bytes = std::max(pos.bytes, varBytes(*c->res.match->gathered));
    if (pos.bytes < opts_.min_bytes)
      return refuseAll("too-small", std::to_string(pos.bytes) + " bytes gathered, under min-bytes=" + std::to_string(opts_.min_bytes));
    for (Candidate* c : pos.members) {
      c->regather = true;
      if (!ring.absent.empty()) {
        c->note_code = "peers-absent";
        c->note = "cross-rank agreement could not be checked: " + std::to_string(ring.absent.size()) + " member(s) of " +
                  ringText(*ring.group) + " are not in this file";
      }
    }
    positions.push_back(std::move(pos));
  }

  RankMemory& memoryOf(Program& p) {
    auto [it, fresh] = memory_.try_emplace(p.position);
    if (fresh) {
      it->second.live = computeProgramLiveness(p);
      MemoryProfile prof = profileMemory(p, it->second.live, 0);
      it->second.tree = std::make_unique<LiveBytesTree>(prof.live_at);
      it->second.peak_before = prof.peak_bytes;
    }
    return it->second;
  }

  // A shard whose buffer died before the re-gather now lives until it: a caveat, and its cost.
  void noteShardKept(Candidate& c, int64_t& kept) {
    const RegatherMatch& m = *c.res.match;
    if (m.ag_at < 0 || !c.note_code.empty()) return;
    int32_t dies = memoryOf(*c.program).live.entry().dies_after[m.shard->id];
    if (dies < 0 || dies >= m.insert_at) return;
    kept += varBytes(*m.shard);
    c.note_code = "shard-kept-alive";
    c.note = std::string(m.shard->name) + " (" + std::to_string(varBytes(*m.shard)) + " bytes) died after op " +
             std::to_string(dies) + "; it now lives until the re-gather before op " + std::to_string(m.insert_at);
  }

  void decideByMemory(std::vector<Position>& positions) {
    std::stable_sort(positions.begin(), positions.end(), [](const Position& a, const Position& b) { return a.bytes > b.bytes; });
    for (Position& pos : positions) {
      auto refuseAll = [&](const std::string& code, const std::string& reason) {
        for (Candidate* c : pos.members) c->refuse(code, reason);
      };
      bool modelled = true, over_budget = opts_.budget <= 0;
      for (Candidate* c : pos.members) {
        const RegatherMatch& m = *c->res.match;
        modelled = modelled && m.ag_at >= 0 && varBytesKnown(*m.gathered) && varBytesKnown(*m.shard);
        if (!over_budget) over_budget = memoryOf(*c->program).tree->peak() > opts_.budget;
      }
      if (!modelled) refuseAll("not-modelled", "the memory model covers entry-block tensors of known size only");
      else if (!over_budget) refuseAll("budget-met", "every member's peak is already within budget=" + std::to_string(opts_.budget));
      if (!modelled || !over_budget) continue;
      std::vector<int64_t> before;
      for (Candidate* c : pos.members) before.push_back(memoryOf(*c->program).tree->peak());
      for (Candidate* c : pos.members) applyRegatherModel(*memoryOf(*c->program).tree, memoryOf(*c->program).live.entry().dies_after, *c->res.match, +1);
      bool raised = false, lowered = false;
      int64_t raised_rank = 0;
      for (size_t i = 0; i < pos.members.size(); ++i) {
        int64_t after = memoryOf(*pos.members[i]->program).tree->peak();
        if (after > before[i] && !raised) raised = true, raised_rank = pos.members[i]->program->rank;
        lowered = lowered || after < before[i];
      }
      if (raised || !lowered) {
        for (Candidate* c : pos.members) applyRegatherModel(*memoryOf(*c->program).tree, memoryOf(*c->program).live.entry().dies_after, *c->res.match, -1);
        refuseAll("peak-not-lowered", raised ? "re-gathering would raise rank " + std::to_string(raised_rank) + "'s peak memory"
                                             : "re-gathering lowers no member rank's peak memory");
      }
    }
  }

  void checkRings(const RingOrder& rings, const std::vector<Position>& positions) {
    std::map<int64_t, std::map<int64_t, std::vector<std::pair<size_t, Candidate*>>>> planned;  // ring -> rank -> (k, c)
    for (const Position& pos : positions)
      for (Candidate* c : pos.members)
        if (c->regather) planned[pos.ring_id][c->program->rank].emplace_back(pos.k, c);
    for (auto& [ring_id, per_rank] : planned) {
      std::map<int64_t, std::vector<PlannedCollective>> insertions;
      for (auto& [rank, list] : per_rank) {
        // The order the rewrite produces: by insertion point, then by k for one point.
        auto key = [](const std::pair<size_t, Candidate*>& e) {
          const Op* b = e.second->res.match->insert_before;
          return std::make_tuple(b->block->position, b->block->indexOf(b), e.first);
        };
        std::sort(list.begin(), list.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
        for (auto& [k, c] : list) insertions[rank].push_back({c->res.match->insert_before, signatureOf(*c->ag)});
      }
      Divergence d = rings.checkInsertions(ring_id, insertions);
      if (d.ok) continue;
      for (auto& [rank, list] : per_rank)
        for (auto& [k, c] : list) c->refuse("ring-order", "ring order would differ on rank " + std::to_string(d.rank) + ": " + d.what);
    }
  }
};

}  // namespace

PassInfo regatherActivationsPass() {
  using O = RegatherActivations::Options;
  PassInfo info;
  info.name = "regather-activations";
  info.description =
      "Keep a forward all-gather's shard for backward and all-gather it again there, so the gathered tensor dies after its forward use";
  info.options = {
      bindOption(&O::mode, "mode",
                 "always: every safe candidate; auto: only when it lowers the rank's peak memory; off: nothing", false,
                 {"always", "auto", "off"}),
      bindOption(&O::budget, "budget", "auto: stop once every member rank's peak is at most this many bytes (0: no budget)"),
      bindOption(&O::min_bytes, "min-bytes", "skip gathered tensors smaller than this many bytes"),
  };
  info.create = [specs = info.options](const OptionValues& v) { return std::make_unique<RegatherActivations>(v.bind<O>(specs)); };
  return info;
}

}  // namespace spopt
