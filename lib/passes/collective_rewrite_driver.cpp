// The shared driver of the passes that change collectives (collective_rewrite_driver.h): the
// candidate table, the every-member-or-none decision, the insertion and order checks, the counts.
#include "passes/collective_rewrite_driver.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "support/parallel.h"

namespace spopt {
namespace {

Refusal refusal(std::string_view code, std::string reason) { return {std::string(code), std::move(reason)}; }

// "rank 3" / "ranks 0, 1, 3", for the members a file lacks.
std::string ranksText(const std::vector<int64_t>& ranks) {
  std::string s = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

CandidateTable::CandidateTable(const Job& job, ChangeWording wording) : job_(job), wording_(std::move(wording)) {
  index_.resize(job.programs.size());
  for (const auto& p : job.programs) index_[p->position].assign(p->next_op_id, -1);
}

size_t CandidateTable::add(Op& op, const Collective& coll, bool counted, bool matched, Refusal own) {
  states_.emplace_back();
  set(states_.size() - 1, op, coll, counted, matched, std::move(own));
  return states_.size() - 1;
}

void CandidateTable::set(size_t i, Op& op, const Collective& coll, bool counted, bool matched, Refusal own) {
  CandidateState& c = states_[i];
  c.op = &op;
  c.coll = coll;
  c.op_index = op.block->indexOf(&op);
  c.counted = counted;
  c.matched = matched;
  c.refusal = std::move(own);
  index_[op.block->program->position][op.id] = int32_t(i);
}

std::optional<size_t> CandidateTable::indexOf(const Op& op) const {
  int32_t i = index_[op.block->program->position][op.id];
  return i < 0 ? std::nullopt : std::optional<size_t>(size_t(i));
}

std::vector<AgreedPosition> CandidateTable::decide(const RingOrder& rings, const DecideOptions& opts) {
  // Rings in the order the job lists its groups (what a count limit counts in); a ring no group
  // declares has no members to agree, and its candidates keep no-group (report).
  std::vector<AgreedPosition> agreed;
  for (const ProcessGroup& g : job_.groups)
    if (const Ring* ring = rings.ring(g.ring_id); ring && ring->group == &g)
      for (size_t k = 0; k < ring->length(); ++k) decidePosition(*ring, k, opts, agreed);
  return agreed;
}

void CandidateTable::decidePosition(const Ring& ring, size_t k, const DecideOptions& opts, std::vector<AgreedPosition>& agreed) {
  AgreedPosition pos{&ring, k, {}};
  for (const RingIssuer& m : ring.members)
    if (k < m.ops.size())
      if (auto i = indexOf(*m.ops[k])) pos.members.push_back(*i);
  if (pos.members.empty()) return;  // nothing of this pass at #k
  Agreement a = agreeAt(ring, k, [&](const RingIssuer&, const Op& op) -> std::optional<std::string> {
    auto i = indexOf(op);
    if (i && states_[*i].matched) return std::nullopt;
    if (i && !states_[*i].refusal.empty()) return states_[*i].refusal.reason;
    return "its collective #" + std::to_string(k) + " is " + std::string(op.type) + ", not " + wording_.wanted;
  });
  Refusal note;
  if (!ring.absent.empty())
    note = refusal(refusal_code::kPeersAbsent, "cross-rank agreement could not be checked: " + ranksText(ring.absent) + " of " +
                                                   ringText(*ring.group) + (ring.absent.size() > 1 ? " are" : " is") +
                                                   " not in this file");
  if (!a.agree) {
    const std::string where = "collective #" + std::to_string(k) + " of " + ringText(*ring.group);
    const std::string blocker = "rank " + std::to_string(a.blocker_rank) + " cannot " + wording_.verb + " " + where + " (" + a.why + ")";
    if (note.empty() && opts.skip_agreement)
      note = refusal(refusal_code::kAgreementSkipped, wording_.past + " although " + blocker + " (" + opts.skip_agreement_option + ")");
    for (size_t i : pos.members) {
      CandidateState& c = states_[i];
      if (!c.matched) continue;  // keeps its own reason
      if (opts.skip_agreement) {
        c.change = true;
        c.note = note;
      } else {
        c.refuse(refusal(refusal_code::kPeerRefused, blocker + ", so no rank of ring " + std::to_string(ring.ring_id) + " does"));
      }
    }
    return;
  }
  if (opts.check)
    if (Refusal why = opts.check(pos); !why.empty()) return refuseAll(pos, why);
  for (size_t i : pos.members) {
    states_[i].change = true;
    states_[i].note = note;
  }
  agreed.push_back(std::move(pos));
}

void CandidateTable::refuseAll(const AgreedPosition& pos, const Refusal& why) {
  for (size_t i : pos.members) states_[i].refuse(why);
}

Refusal CandidateTable::sameInsertionSlot(const AgreedPosition& pos, InsertedBefore before) const {
  const Ring& ring = *pos.ring;
  size_t ref_slot = ring.members.front().slotBefore(*before(pos.members.front()));
  for (size_t i = 1; i < ring.members.size(); ++i) {
    // Each member after the first is asked whether its slot is the first one's (it is, unless the
    // ring order would differ), before any search.
    const Op* here = before(pos.members[i]);
    if (ring.members[i].isSlotBefore(*here, ref_slot)) continue;
    size_t slot = ring.members[i].slotBefore(*here);
    if (slot != ref_slot)
      return refusal(refusal_code::kRingOrder,
                     "ring order would differ on rank " + std::to_string(ring.members[i].program->rank) + ": its " + wording_.noun +
                         " of collective #" + std::to_string(pos.k) + " of ring " + std::to_string(ring.ring_id) + " would follow " +
                         std::to_string(slot) + " ring collectives, rank " + std::to_string(ring.members.front().program->rank) +
                         "'s " + std::to_string(ref_slot));
  }
  return {};
}

void CandidateTable::checkInsertions(const RingOrder& rings, const std::vector<AgreedPosition>& positions, const PlanOf& planned) {
  std::map<int64_t, std::map<int64_t, std::vector<std::pair<size_t, size_t>>>> per_ring;  // ring -> rank -> (k, candidate)
  for (const AgreedPosition& pos : positions)
    for (size_t i : pos.members)
      if (states_[i].change) per_ring[pos.ring->ring_id][states_[i].op->block->program->rank].emplace_back(pos.k, i);
  for (auto& [ring_id, per_rank] : per_ring) {
    std::map<int64_t, std::vector<PlannedCollective>> insertions;
    std::vector<std::pair<const std::vector<std::pair<size_t, size_t>>*, std::vector<PlannedCollective>*>> ranks;
    for (auto& [rank, list] : per_rank) ranks.emplace_back(&list, &insertions[rank]);
    // Each rank's plans on a thread of their own (a plan reads only the rank's program), in the
    // order the rewrite produces: by insertion point, then by k for one point. Each plan is made
    // once (it reads the collective's signature), not once per comparison.
    parallelFor(ranks.size(), [&](size_t r) {
      struct Keyed {
        std::tuple<size_t, size_t, size_t> key;
        PlannedCollective plan;
      };
      std::vector<Keyed> keyed;
      keyed.reserve(ranks[r].first->size());
      for (auto& [k, i] : *ranks[r].first) {
        PlannedCollective plan = planned(i);
        const auto [block, index] = issueKey(*plan.before);
        keyed.push_back({{block, index, k}, std::move(plan)});
      }
      std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
      for (Keyed& e : keyed) ranks[r].second->push_back(std::move(e.plan));
    });
    Divergence d = rings.checkInsertions(ring_id, insertions);
    if (d.ok) continue;
    for (auto& [rank, list] : per_rank)
      for (auto& [k, i] : list)
        states_[i].refuse(refusal(refusal_code::kRingOrder, "ring order would differ on rank " + std::to_string(d.rank) + ": " + d.what));
  }
}

void CandidateTable::report(PassContext& ctx) const {
  for (const CandidateState& c : states_) {
    if (!c.counted) continue;
    ctx.countCandidate();
    if (c.change) {
      ctx.countRewritten();
      if (c.note.empty()) continue;
      if (ctx.explaining()) ctx.note(explainRecord(*c.op, c.op_index, c.note));
      else ctx.countNote(c.note.code);
      continue;
    }
    if (!c.refusal.empty() && !ctx.explaining()) {
      ctx.countRefusal(c.refusal.code);
      continue;
    }
    Refusal why = c.refusal;
    if (why.empty()) {  // matched, on a ring no decision reached: its rank is not a member
      const ProcessGroup* g = job_.group(c.coll.ring_id);
      int64_t rank = c.op->block->program->rank;
      why = g ? refusal(refusal_code::kNotMember, "rank " + std::to_string(rank) + " is not a member of " + ringText(*g))
              : refusal(refusal_code::kNoGroup, "ring " + std::to_string(c.coll.ring_id) + " has no process group");
    }
    ctx.refuse(explainRecord(*c.op, c.op_index, why));
  }
}

Refusal checkRingOrders(const Job& job, const RingOrder& before, RingFacts* facts) {
  RingOrder after(job, facts);
  for (const Ring& r : after.rings()) {
    std::map<int64_t, std::vector<const Op*>> per_rank;
    for (const RingIssuer& m : r.members) per_rank[m.program->rank] = m.ops;
    Divergence d = before.checkOrder(r.ring_id, per_rank);
    if (!d.ok) return refusal(refusal_code::kRingOrder, "ring " + std::to_string(r.ring_id) + ": " + d.what);
    // Equal signatures are not enough where collectives moved: two all-gathers of one size would
    // pair with each other's partner. Each member's new order must be the same permutation of the
    // old aligned positions.
    const RingIssuer* ref = nullptr;
    for (const RingIssuer& m : r.members) {
      if (!ref) {
        ref = &m;
        continue;
      }
      for (size_t k = 0; k < m.ops.size() && k < ref->ops.size(); ++k) {
        auto was = before.placeOf(*m.ops[k]), ref_was = before.placeOf(*ref->ops[k]);
        if (was && ref_was && was->k == ref_was->k) continue;
        auto pos = [](const std::optional<RingPlace>& p) { return p ? "#" + std::to_string(p->k) : std::string("a new one"); };
        return refusal(refusal_code::kRingOrder, "ring " + std::to_string(r.ring_id) + " collective #" + std::to_string(k) + ": rank " +
                                                     std::to_string(ref->program->rank) + " issues its former " + pos(ref_was) +
                                                     ", rank " + std::to_string(m.program->rank) + " its former " + pos(was));
      }
    }
  }
  return {};
}

}  // namespace spopt
