#pragma once
// What the analyses read of each op that a reorder does not change, read once per op: its phase,
// stream, events, collective or point-to-point role, which inputs it reads only for their shape,
// and (under one hardware model) its cost. A pass that simulates, profiles and schedules one job
// several times keeps one cache, so each op's attributes are parsed once for all of them; the
// happens-before graph (happens_before.h), liveness (liveness.h) and the simulator (simulate.h)
// take it. Entries are by program position and op id (ids are never reused) and filled on first
// use; a caller that edits an op's attrs or dist_attr calls forget() for it.
//
// Threads: once one thread has read some op of each program (which sizes the cache's list of
// programs), threads that each work on programs of their own may read and cost their programs'
// ops at once, filling the facts of ops that are neither collectives nor sends (the stream names
// they share are interned under a lock). A collective's or a send's first read is one thread's,
// or readAll's, which reads every program on threads and places their details after.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "analysis/collectives.h"
#include "analysis/cost_model.h"
#include "analysis/p2p.h"
#include "analysis/ring_order.h"
#include "ir/ir.h"
#include "ir/op_role.h"

namespace spopt {

// Kept small (the cache holds one per op of the job): a collective's or a send's details are in a
// CommFacts beside it.
struct OpFacts {
  Phase phase = Phase::Unknown;
  uint32_t stream = 0;             // OpFactsCache::streamName(stream); 0 is "default"
  uint32_t shape_only_inputs = 0;  // bit i: input slot i is read only for its shape (no-need-buffer)
  uint32_t comm = UINT32_MAX;      // OpFactsCache::comm's index: a communicating collective or a send or receive
  bool has_sub_block = false;      // attr sub_block present (the op runs a sub-block)
  bool has_events = false;         // names an event to wait for or to record
  bool communicates = false;       // a collective that moves data (not c_identity)
  bool kernel_comm = false;        // of those, one that computes and all-reduces inside its kernel
  bool many_inputs = false;        // more input slots than shape_only_inputs has bits: ask the catalogue
  bool kernel_only = false;        // neither a collective nor a send or receive: its cost is its kernel's
};

struct CommFacts {
  CommFacts() { coll.ring_id = -1; }
  Collective coll;    // a communicating collective as asCollective reads it
  CollectiveSig sig;  // of a communicating collective
  std::optional<PointToPoint> p2p;
};

class OpFactsCache final : public RingFacts {
 public:
  OpFactsCache() = default;  // facts only: cost() needs a model
  explicit OpFactsCache(const HardwareModel& m) : model_(&m) {}
  OpFactsCache(const OpFactsCache&) = delete;
  OpFactsCache& operator=(const OpFactsCache&) = delete;

  const HardwareModel& model() const { return *model_; }
  // Costs under `m` while it lives: a pass that costs the ops of a cache it did not make (the pass
  // manager's, passes/pass.h) sets its model for as long as it costs. Costs read under another
  // model, or before, are not read again.
  class ModelScope {
   public:
    ModelScope(OpFactsCache& cache, const HardwareModel& m) : cache_(cache), was_(cache.model_) {
      cache.model_ = &m;
      ++cache.cost_epoch_;
    }
    ~ModelScope() {
      cache_.model_ = was_;
      ++cache_.cost_epoch_;
    }
    ModelScope(const ModelScope&) = delete;
    ModelScope& operator=(const ModelScope&) = delete;

   private:
    OpFactsCache& cache_;
    const HardwareModel* was_;
  };
  double cost(const Op& op);
  Phase phase(const Op& op) { return facts(op).phase; }
  const OpFacts& facts(const Op& op) {
    Entry& e = entry(op);
    if (!e.known) fill(op, e);
    return e.facts;
  }
  // RingFacts, for RingOrder.
  std::optional<int64_t> ringOf(const Op& op) override {
    const OpFacts& f = facts(op);
    return f.communicates ? std::optional<int64_t>(comm(f).coll.ring_id) : std::nullopt;
  }
  // asCollective(op) for a communicating collective, without reading its attributes again;
  // nullopt for every other op (c_identity included).
  std::optional<Collective> collective(const Op& op) {
    const OpFacts& f = facts(op);
    return f.communicates ? std::optional<Collective>(comm(f).coll) : std::nullopt;
  }
  CollectiveSig signatureOfCollective(const Op& op) override { return comm(facts(op)).sig; }
  // Reads the facts of every op of `job` not read yet, each program's on a thread of its own; the
  // collectives' and sends' details are placed after, in job order, as reading each op in job
  // order would place them.
  void readAll(const Job& job);
  // Drops what was read of `op` (its attrs or dist_attr changed); its cost stays.
  void forget(const Op& op) { entry(op).known = false; }
  // Reads again what `j` records as edited (an op's args, attrs or execution attributes; a new
  // op), in journal order on this thread, and drops the costs of ops whose args or attrs changed:
  // a cache complete before the edits is complete after them (moved and erased ops keep their
  // entries, which hold for them). With a cursor: only the records after it, which it then passes.
  struct JournalCursor {
    size_t ops = 0, execution = 0;
  };
  void refresh(const EditJournal& j, JournalCursor& from);
  void refresh(const EditJournal& j) {
    JournalCursor all;
    refresh(j, all);
  }
  // Drops every entry (the ops' facts and costs), as a cache just made.
  void clear();
  // What `f` (an op's facts) has beside it: the defaults when it is neither a collective nor a send.
  const CommFacts& comm(uint32_t index) const { return index < comm_.size() ? comm_[index] : kNoComm; }
  const CommFacts& comm(const OpFacts& f) const { return comm(f.comm); }
  const std::string& streamName(uint32_t id) const { return stream_names_[id]; }
  size_t streamCount() const { return stream_names_.size(); }

 private:
  struct Entry {
    OpFacts facts;
    bool known = false;
    uint32_t cost_epoch = 0;  // the cost_epoch_ `cost` was computed in (0: never)
    double cost = 0;
  };
  static inline const CommFacts kNoComm{};
  Entry& entry(const Op& op) {
    const size_t pos = op.block->program->position;
    if (pos < by_program_.size() && op.id < by_program_[pos].size()) return by_program_[pos][op.id];
    return grow(op);
  }
  Entry& grow(const Op& op);
  std::vector<Entry>& sizeFor(const Program& p, size_t ids);  // room for ids [0, max(ids, next_op_id))
  void fill(const Op& op, Entry& e);
  OpFacts read(const Op& op, CommFacts* comm);   // the op's facts; *comm: its CommFacts, when it has one
  uint32_t place(uint32_t slot, CommFacts comm);  // the comm_ index it gets (`slot`, its old one, when valid)
  uint32_t internStream(std::string_view raw, const Op& op);

  const HardwareModel* model_ = nullptr;
  uint32_t cost_epoch_ = 1;  // bumped whenever model_ changes
  std::vector<std::vector<Entry>> by_program_;
  std::vector<CommFacts> comm_;
  std::vector<std::string> stream_names_{"default"};
  absl::flat_hash_map<std::string, uint32_t> stream_of_raw_;  // execution_stream's raw text -> name id
  absl::flat_hash_map<std::string, uint32_t> stream_of_name_{{"default", 0}};
  std::mutex streams_;  // guards the three above while threads fill facts
};

}  // namespace spopt
