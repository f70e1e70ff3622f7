#pragma once
// The order in which each member rank issues collectives on each ring, aligned across ranks: the
// one alignment the verifier, the fuse pass and the passes that insert or move collectives share.
//
// NCCL pairs collectives across the ranks of a ring by order of issue. A program issues them in
// blocks order, then ops order (collectivesByRing, analysis/collectives.h); c_identity does not
// communicate and is not counted. Collective #k of a ring on one rank pairs with #k on every other
// member: its aligned position k. A change at position k must happen on every member or on none.
//
// Build a RingOrder once per job (linear: one walk over every op); it views the job, so rebuild it
// after changing the job (positions used by the insertion check come from Block::indexOf). Given
// a RingFacts (an OpFactsCache, op_facts.h, is one), it reads each op's ring and signature there
// instead of parsing the op's attributes again; the source must outlive it.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/collectives.h"
#include "ir/ir.h"

namespace spopt {

// What must match across ranks at an aligned position (what the verifier compares): kind, reduce
// op, and the input's dtype and element count.
struct CollectiveSig {
  CollectiveKind kind = CollectiveKind::AllReduce;
  ReduceOp reduce = ReduceOp::Sum;
  DType dtype = DType::Float32;
  int64_t numel = -1;  // -1: unknown (no input, or an unknown dim); never matches
  bool operator==(const CollectiveSig& o) const {
    return kind == o.kind && reduce == o.reduce && dtype == o.dtype && numel == o.numel && numel >= 0;
  }
};
// The signature of a communicating collective op (std::logic_error for any other op).
CollectiveSig signatureOf(const Op& op);
// Where `op` stands in its program's issue order: (block position, index in its block), the
// order ProgramChecker walks. Compared, never stored: an edit renumbers.
inline std::pair<size_t, size_t> issueKey(const Op& op) { return {op.block->position, op.block->indexOf(&op)}; }
// The same, of `op` as `c` (asCollective(op)) reads it, without reading its attributes again.
CollectiveSig signatureOf(const Op& op, const Collective& c);
// "all-reduce float32[4096]", for messages.
std::string describeSig(const CollectiveSig& s);
// "ring 0 [0,1]": the ring and its member ranks, as the passes' messages write it.
std::string ringText(const ProcessGroup& g);

struct RingIssuer {
  const Program* program = nullptr;
  std::vector<const Op*> ops;  // its communicating collectives on the ring, in issue order
  // The issue-order slot of an op inserted before `before` (of this program): how many of `ops`
  // precede it.
  size_t slotBefore(const Op& before) const;
  // Whether slotBefore(before) is `slot`, read from the two ops around that slot (no search).
  bool isSlotBefore(const Op& before, size_t slot) const;
};

struct Ring {
  int64_t ring_id = 0;
  const ProcessGroup* group = nullptr;  // null: ops name a ring the job has no group for
  // Member ranks (group order) whose program is in the job, each with its ops (possibly none).
  std::vector<RingIssuer> members;
  std::vector<int64_t> absent;  // member ranks with no program in the job
  // Every program issuing on the ring, in job order (members or not): what the verifier compares.
  std::vector<RingIssuer> issuers;
  size_t length() const;  // the most collectives any present member issues on it
};

struct RingPlace {
  int64_t ring_id = 0;
  size_t k = 0;  // aligned position: the op is collective #k of its program on the ring
};

// The rule "a change at aligned position k happens on every member rank or on none".
struct Agreement {
  bool agree = true;
  int64_t blocker_rank = 0;  // the first member (group order) that refuses, when !agree
  std::string why;           // its reason
};
// Asks `refuses` for each present member's op at position k, in group order, and stops at the
// first refusal. A member that issues no collective #k refuses with "it issues no collective #k"
// (`refuses` is not called). `refuses` returns the reason, or nullopt when the member can change.
// Absent members (Ring::absent) cannot be asked: callers note them ("peers-absent"). This is the
// rule every pass that changes collectives decides by.
using MemberCheck = std::function<std::optional<std::string>(const RingIssuer& member, const Op& op_at_k)>;
Agreement agreeAt(const Ring& ring, size_t k, const MemberCheck& refuses);

// A collective a member rank would insert before `before` (an op of its program, any block; the
// new op lands after every ring collective issued before `before`). Several before the same op go
// in list order.
struct PlannedCollective {
  const Op* before = nullptr;
  CollectiveSig sig;
};
struct Divergence {
  bool ok = true;
  int64_t rank = 0;      // the first member (group order) whose new order differs from the first member's
  int64_t ref_rank = 0;  // the first present member, the reference
  size_t k = 0;          // the first aligned position that differs
  std::string what;      // "rank 0 issues all-reduce float32[8] at #3, rank 1 issues all-gather float32[8]"
};

// Where a RingOrder may read what it would otherwise parse from each op's attributes: an interface,
// so that this layer (the verifier's) does not depend on the analysis layer's cache.
class RingFacts {
 public:
  virtual ~RingFacts() = default;
  // The ring id of `op` when it is a collective that communicates, else nullopt.
  virtual std::optional<int64_t> ringOf(const Op& op) = 0;
  // signatureOf(op) for an op ringOf names.
  virtual CollectiveSig signatureOfCollective(const Op& op) = 0;
};

// Each program's communicating collectives by ring, in issue order (collectivesByRing's), by
// program position: what a RingOrder is built from.
using IssueLists = std::vector<std::map<int64_t, std::vector<const Op*>>>;

class RingOrder {
 public:
  // `facts`: where the rings' ops' signatures are read. The walk reads every op's from it (on one
  // thread: a cache's first reads of a collective are one thread's); after it, the questions
  // below read them on threads of their own.
  explicit RingOrder(const Job& job, RingFacts* facts = nullptr);
  // From the lists already known (the verifier's, kept between passes): no walk over the ops.
  // `facts`, when given, has read every op of the lists already (a pass's PipelineFacts).
  RingOrder(const Job& job, IssueLists by_program, RingFacts* facts = nullptr);

  const std::vector<Ring>& rings() const { return rings_; }  // ascending ring id
  const Ring* ring(int64_t ring_id) const;                    // null when no op or group names it
  // The op's ring and aligned position; nullopt for ops that are not communicating collectives.
  // O(1).
  std::optional<RingPlace> placeOf(const Op& op) const;
  // A program's ring -> ops in issue order (what collectivesByRing returns for it).
  const std::map<int64_t, std::vector<const Op*>>& byRing(const Program& p) const { return by_program_[p.position]; }

  // "If each member inserts these collectives, is the ring's order still the same on every
  // member?" `per_rank`: member rank -> its insertions (members not named insert nothing).
  Divergence checkInsertions(int64_t ring_id, const std::map<int64_t, std::vector<PlannedCollective>>& per_rank) const;
  // "If each member issues its ring collectives in this new order, is the order still identical?"
  // `per_rank`: member rank -> every ring collective of it, in its new issue order; members not
  // named keep their order.
  Divergence checkOrder(int64_t ring_id, const std::map<int64_t, std::vector<const Op*>>& per_rank) const;

 private:
  Divergence compare(const Ring& r, const std::vector<std::pair<int64_t, std::vector<CollectiveSig>>>& seqs) const;
  CollectiveSig signature(const Op& op) const;
  void index(const Job& job);  // rings_, index_, place_of_ and ring_ids_ from by_program_
  RingFacts* facts_ = nullptr;
  std::vector<Ring> rings_;
  std::map<int64_t, size_t> index_;                             // ring id -> rings_ index
  std::vector<std::map<int64_t, std::vector<const Op*>>> by_program_;  // [program position]
  struct Place {
    int32_t k = -1;         // -1: not a communicating collective
    uint32_t ring = 0;      // index in ring_ids_
  };
  std::vector<std::vector<Place>> place_of_;                    // [program position][op id]
  std::vector<int64_t> ring_ids_;                               // in order of first sight
};

}  // namespace spopt
