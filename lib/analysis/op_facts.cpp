#include "analysis/op_facts.h"

#include <algorithm>
#include <stdexcept>

#include "analysis/collectives.h"
#include "ops/op_view.h"
#include "support/parallel.h"

namespace spopt {

OpFactsCache::Entry& OpFactsCache::grow(const Op& op) {
  return sizeFor(*op.block->program, op.id + 1)[op.id];
}

std::vector<OpFactsCache::Entry>& OpFactsCache::sizeFor(const Program& p, size_t ids) {
  if (by_program_.size() <= p.position) by_program_.resize(p.position + 1);
  std::vector<Entry>& v = by_program_[p.position];
  if (v.size() < ids || v.size() < p.next_op_id) {
    const size_t n = std::max<size_t>(p.next_op_id, ids);
    // A pass adds ops after its first questions (overlap-collectives' grad split about a fifth
    // more): with room for half as many again, the list is not copied into fresh pages when they
    // come. Room never written is never faulted in.
    if (v.capacity() < n) v.reserve(n + n / 2);
    v.resize(n);
  }
  return v;
}

void OpFactsCache::readAll(const Job& job) {
  if (by_program_.size() < job.programs.size()) by_program_.resize(job.programs.size());
  struct Comm {
    Entry* entry;
    uint32_t slot;  // the entry's comm slot before this read (UINT32_MAX: none)
    CommFacts facts;
  };
  std::vector<std::vector<Comm>> comms(job.programs.size());  // [program position], in op order
  parallelFor(job.programs.size(), [&](size_t i) {  // each program's entries on one thread (sized there too)
    std::vector<Entry>& entries = sizeFor(*job.programs[i], 0);
    for (const auto& b : job.programs[i]->blocks)
      for (const Op& op : b->inOrder()) {
        Entry& e = entries[op.id];
        if (e.known) continue;
        CommFacts c;
        const uint32_t slot = e.facts.comm;
        e.facts = read(op, &c);
        e.known = true;
        if (e.facts.communicates || c.p2p) comms[i].push_back({&e, slot, std::move(c)});
      }
  });
  for (auto& in_program : comms)
    for (Comm& c : in_program) c.entry->facts.comm = place(c.slot, std::move(c.facts));
}

double OpFactsCache::cost(const Op& op) {
  Entry& e = entry(op);
  if (e.cost_epoch != cost_epoch_) {
    if (!model_) throw std::logic_error("OpFactsCache::cost: the cache has no hardware model");
    // Facts read spare the lookups: most ops compute only; a collective's or a send's details are read.
    if (!e.known) e.cost = opCostSeconds(op, *model_);
    else if (e.facts.kernel_only) e.cost = kernelSeconds(op, *model_);
    else if (e.facts.communicates) e.cost = collectiveSeconds(op, comm(e.facts).coll, *model_);
    else if (const CommFacts& c = comm(e.facts); c.p2p) e.cost = p2pSeconds(*c.p2p, *model_);
    else e.cost = opCostSeconds(op, *model_);
    e.cost_epoch = cost_epoch_;
  }
  return e.cost;
}

void OpFactsCache::clear() {
  by_program_.clear();
  comm_.clear();
  ++cost_epoch_;
}

void OpFactsCache::refresh(const EditJournal& j, JournalCursor& from) {
  for (auto [ops, done] : {std::pair{&j.ops, &from.ops}, std::pair{&j.execution, &from.execution}}) {
    for (size_t k = *done; k < ops->size(); ++k) {
      const Op* op = (*ops)[k];
      if (j.erased.contains(op)) continue;
      Entry& e = entry(*op);
      if (ops == &j.ops) e.cost_epoch = 0;
      fill(*op, e);
    }
    *done = ops->size();
  }
}

uint32_t OpFactsCache::internStream(std::string_view raw, const Op& op) {
  // Most ops run on the default stream: named so, or not at all (Op::executionStream). Those take
  // neither the lock nor a copy of the text.
  if (raw == "\"default\"" || raw == "\"\"") return 0;
  std::lock_guard<std::mutex> lock(streams_);
  auto [known, fresh_raw] = stream_of_raw_.try_emplace(std::string(raw), 0);
  if (fresh_raw) {
    auto [it, fresh] = stream_of_name_.try_emplace(op.executionStream(), uint32_t(stream_names_.size()));
    if (fresh) stream_names_.push_back(it->first);
    known->second = it->second;
  }
  return known->second;
}

void OpFactsCache::fill(const Op& op, Entry& e) {
  CommFacts c;
  const uint32_t slot = e.facts.comm;
  e.facts = read(op, &c);
  if (e.facts.communicates || c.p2p) e.facts.comm = place(slot, std::move(c));
  e.known = true;
}

uint32_t OpFactsCache::place(uint32_t slot, CommFacts c) {
  // An op read again after forget() (its stream or events changed) keeps its slot: a pass that
  // moves every collective to a comm stream does not grow the list by as many again.
  if (slot < comm_.size()) {
    comm_[slot] = std::move(c);
    return slot;
  }
  comm_.push_back(std::move(c));
  return uint32_t(comm_.size() - 1);
}

OpFacts OpFactsCache::read(const Op& op, CommFacts* c) {
  OpFacts f;
  f.phase = phaseOf(op);
  f.has_sub_block = op.attrs.has("sub_block");
  // Most ops' dist_attr names no event ("[]" and ""), or none at all: decoded only where it does.
  if (op.hasDistAttr()) {
    for (const Member& m : op.dist_attr.peekMembers()) {
      if (m.key == "execution_stream") f.stream = internStream(m.raw, op);
      else if (m.key == "events_to_wait") f.has_events = f.has_events || m.raw != "[]";
      else if (m.key == "event_to_record") f.has_events = f.has_events || m.raw != "\"\"";
    }
  }
  ResolvedOp r = resolveOp(op.type);
  if (r && r.def->collective) {
    auto coll = asCollective(op);
    if (coll && communicates(*coll)) {
      f.communicates = true;
      f.kernel_comm = coll->kind == CollectiveKind::KernelAllReduce;
      c->coll = *coll;
      c->sig = signatureOf(op, *coll);
    }
  }
  if (r && r.def->p2p) c->p2p = asPointToPoint(op);
  f.kernel_only = !r || (!r.def->collective && !r.def->p2p);
  const OpView view(op, r);
  f.many_inputs = op.inputs.size() > 32;
  for (size_t i = 0; i < op.inputs.size() && i < 32; ++i)
    if (!view.readsBuffer(op.inputs[i].name)) f.shape_only_inputs |= uint32_t(1) << i;
  return f;
}

}  // namespace spopt
