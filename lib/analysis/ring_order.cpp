#include "analysis/ring_order.h"

#include <algorithm>
#include <stdexcept>

#include "support/parallel.h"

namespace spopt {

CollectiveSig signatureOf(const Op& op) {
  auto c = asCollective(op);
  if (!c || !communicates(*c)) throw std::logic_error("signatureOf: " + std::string(op.type) + " is not a communicating collective");
  return signatureOf(op, *c);
}

CollectiveSig signatureOf(const Op& op, const Collective& c) {
  CollectiveSig s;
  s.kind = c.kind;
  s.reduce = c.reduce;
  if (const Var* x = op.in(c.in_slot)) {
    s.dtype = x->dtype;
    s.numel = x->numel();
  }
  return s;
}

std::string describeSig(const CollectiveSig& s) {
  std::string t = collectiveKindName(s.kind);
  if (s.kind == CollectiveKind::AllReduce && s.reduce != ReduceOp::Sum) t += "(reduce_type " + std::to_string(int(s.reduce)) + ")";
  return t + " " + std::string(dtypeName(s.dtype)) + "[" + (s.numel < 0 ? std::string("?") : std::to_string(s.numel)) + "]";
}

std::string ringText(const ProcessGroup& g) {
  std::string s = "ring " + std::to_string(g.ring_id) + " [";
  for (size_t i = 0; i < g.ranks.size(); ++i) s += (i ? "," : "") + std::to_string(g.ranks[i]);
  return s + "]";
}

size_t Ring::length() const {
  size_t n = 0;
  for (const auto& m : members) n = std::max(n, m.ops.size());
  return n;
}

Agreement agreeAt(const Ring& ring, size_t k, const MemberCheck& refuses) {
  Agreement a;
  for (const RingIssuer& m : ring.members) {
    std::optional<std::string> why;
    if (k >= m.ops.size()) why = "it issues no collective #" + std::to_string(k);
    else why = refuses(m, *m.ops[k]);
    if (why) {
      a.agree = false;
      a.blocker_rank = m.program->rank;
      a.why = std::move(*why);
      return a;
    }
  }
  return a;
}

RingOrder::RingOrder(const Job& job, RingFacts* facts) : facts_(facts) {
  by_program_.resize(job.programs.size());
  if (facts) {  // collectivesByRing's walk, on the cache (which one thread fills)
    for (const auto& p : job.programs)
      for (const auto& b : p->blocks)
        for (const Op& op : b->inOrder())
          if (std::optional<int64_t> ring = facts->ringOf(op)) by_program_[p->position][*ring].push_back(&op);
  } else {  // each program's walk on a thread of its own: it reads only that program
    parallelFor(job.programs.size(), [&](size_t i) { by_program_[i] = collectivesByRing(*job.programs[i]); });
  }
  index(job);
}

RingOrder::RingOrder(const Job& job, IssueLists by_program, RingFacts* facts) : facts_(facts), by_program_(std::move(by_program)) {
  by_program_.resize(job.programs.size());
  index(job);
}

void RingOrder::index(const Job& job) {
  place_of_.resize(job.programs.size());
  std::map<int64_t, Ring> rings;
  for (const auto& p : job.programs) {
    const auto& mine = by_program_[p->position];
    auto& places = place_of_[p->position];
    places.assign(p->next_op_id, Place{});
    for (const auto& [ring, ops] : mine) {
      auto known = std::find(ring_ids_.begin(), ring_ids_.end(), ring);
      const auto ring_index = uint32_t(known - ring_ids_.begin());
      if (known == ring_ids_.end()) ring_ids_.push_back(ring);
      for (size_t k = 0; k < ops.size(); ++k) places[ops[k]->id] = {int32_t(k), ring_index};
      rings[ring].issuers.push_back({p.get(), ops});
    }
  }
  for (const ProcessGroup& g : job.groups) rings[g.ring_id];  // rings with a group but no op yet
  for (auto& [id, r] : rings) {
    r.ring_id = id;
    r.group = job.group(id);
    if (r.group)
      for (int64_t rank : r.group->ranks) {
        const Program* p = job.program(rank);
        if (!p) {
          r.absent.push_back(rank);
          continue;
        }
        auto it = by_program_[p->position].find(id);
        r.members.push_back({p, it == by_program_[p->position].end() ? std::vector<const Op*>{} : it->second});
      }
    index_[id] = rings_.size();
    rings_.push_back(std::move(r));
  }
}

const Ring* RingOrder::ring(int64_t ring_id) const {
  auto it = index_.find(ring_id);
  return it == index_.end() ? nullptr : &rings_[it->second];
}

std::optional<RingPlace> RingOrder::placeOf(const Op& op) const {
  const Program* p = op.block->program;
  if (p->position >= place_of_.size() || op.id >= place_of_[p->position].size()) return std::nullopt;
  const Place& place = place_of_[p->position][op.id];
  if (place.k < 0) return std::nullopt;
  return RingPlace{ring_ids_[place.ring], size_t(place.k)};
}

CollectiveSig RingOrder::signature(const Op& op) const {
  if (!facts_ || !facts_->ringOf(op)) return signatureOf(op);  // (signatureOf's error for an op that does not communicate)
  return facts_->signatureOfCollective(op);
}

Divergence RingOrder::compare(const Ring& r, const std::vector<std::pair<int64_t, std::vector<CollectiveSig>>>& seqs) const {
  Divergence d;
  if (seqs.empty()) return d;
  const auto& [ref_rank, ref] = seqs.front();
  d.ref_rank = ref_rank;
  for (size_t i = 1; i < seqs.size(); ++i) {
    const auto& [rank, seq] = seqs[i];
    size_t n = std::min(ref.size(), seq.size());
    for (size_t k = 0; k <= n; ++k) {
      bool differs = k < n ? !(ref[k] == seq[k]) : ref.size() != seq.size();
      if (!differs) continue;
      auto at = [&](const std::vector<CollectiveSig>& s) { return k < s.size() ? describeSig(s[k]) : std::string("nothing"); };
      d.ok = false;
      d.rank = rank;
      d.k = k;
      d.what = "ring " + std::to_string(r.ring_id) + " collective #" + std::to_string(k) + ": rank " + std::to_string(ref_rank) +
               " issues " + at(ref) + ", rank " + std::to_string(rank) + " issues " + at(seq);
      return d;
    }
  }
  return d;
}

size_t RingIssuer::slotBefore(const Op& before) const {
  auto at = issueKey(before);
  return size_t(std::lower_bound(ops.begin(), ops.end(), at, [&](const Op* o, const auto& v) { return issueKey(*o) < v; }) - ops.begin());
}

bool RingIssuer::isSlotBefore(const Op& before, size_t slot) const {
  if (slot > ops.size()) return false;
  const auto at = issueKey(before);
  return (slot == ops.size() || !(issueKey(*ops[slot]) < at)) && (slot == 0 || issueKey(*ops[slot - 1]) < at);
}

Divergence RingOrder::checkInsertions(int64_t ring_id, const std::map<int64_t, std::vector<PlannedCollective>>& per_rank) const {
  const Ring* r = ring(ring_id);
  if (!r) return {};
  std::vector<std::pair<int64_t, std::vector<CollectiveSig>>> seqs(r->members.size());
  // Each member's new order reads only the member's program (and facts_ read before): on a thread of its own.
  parallelFor(r->members.size(), [&](size_t mi) {
    const RingIssuer& m = r->members[mi];
    std::vector<CollectiveSig> seq;
    auto it = per_rank.find(m.program->rank);
    if (it == per_rank.end()) {
      for (const Op* o : m.ops) seq.push_back(signature(*o));
    } else {
      // Each insertion's slot: the number of ring ops issued before its `before` op. Stable sort
      // keeps several insertions at one slot in list order.
      std::vector<std::pair<size_t, const PlannedCollective*>> slots;
      for (const PlannedCollective& pc : it->second) {
        if (!pc.before || pc.before->block->program != m.program)
          throw std::logic_error("checkInsertions: an insertion of rank " + std::to_string(m.program->rank) + " is not placed in its program");
        slots.emplace_back(m.slotBefore(*pc.before), &pc);
      }
      std::stable_sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      size_t s = 0;
      for (size_t k = 0; k <= m.ops.size(); ++k) {
        for (; s < slots.size() && slots[s].first == k; ++s) seq.push_back(slots[s].second->sig);
        if (k < m.ops.size()) seq.push_back(signature(*m.ops[k]));
      }
    }
    seqs[mi] = {m.program->rank, std::move(seq)};
  });
  return compare(*r, seqs);
}

Divergence RingOrder::checkOrder(int64_t ring_id, const std::map<int64_t, std::vector<const Op*>>& per_rank) const {
  const Ring* r = ring(ring_id);
  if (!r) return {};
  std::vector<std::pair<int64_t, std::vector<CollectiveSig>>> seqs;
  for (const RingIssuer& m : r->members) {
    auto it = per_rank.find(m.program->rank);
    const auto& ops = it == per_rank.end() ? m.ops : it->second;
    std::vector<CollectiveSig> seq;
    for (const Op* o : ops) seq.push_back(signature(*o));
    seqs.emplace_back(m.program->rank, std::move(seq));
  }
  return compare(*r, seqs);
}

}  // namespace spopt
