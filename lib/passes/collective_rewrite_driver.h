#pragma once
// The driver the passes that change collectives stand on (fuse-allreduce-split,
// regather-activations; overlap-collectives uses its order check), in the manner of XLA's
// reduce_scatter_creator standing on collective_opt_utils: a pass file is its matcher (one
// collective on one rank -> a match or a Refusal), its rewrite (one match on one rank) and its
// options. What must be the same in every such pass is written once, here:
//  - the candidate table: one entry per (program, op) the pass matched, found from the op in O(1);
//  - the decision at each aligned ring position (analysis/ring_order.h): collectives pair up across
//    ranks by order of issue on a ring, so collective #k is changed on every present member of the
//    ring or on none (otherwise the ring desynchronises and NCCL hangs), with one set of codes and
//    wordings (refusal.h: peer-refused, peers-absent, agreement-skipped, no-group, not-member,
//    ring-order);
//  - the insertion checks of passes that add collectives (every member's new op after the same
//    number of ring collectives; then each ring's whole new order) and the order check of passes
//    that move them;
//  - the explain records and the candidate / rewritten / refused counts.
// Linear: one walk over the ops for the table; O(members) per aligned position.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <absl/functional/function_ref.h>

#include "analysis/collectives.h"
#include "analysis/ring_order.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/refusal.h"
#include "support/parallel.h"

namespace spopt {

// The driver's part of one candidate: what the pass's matcher said and what was decided.
struct CandidateState {
  Op* op = nullptr;
  Collective coll{};
  size_t op_index = 0;   // the op's index in its block in the pass's input (what messages report)
  bool counted = false;  // a candidate of the pass (in --stats); the others only explain a peer's refusal
  bool matched = false;  // passed this rank's own checks
  bool change = false;   // the decision
  Refusal refusal;       // why not: this rank's own reason, or its ring's
  Refusal note;          // a caveat on a changed one (empty: none)
  void refuse(Refusal r) {
    change = false;
    refusal = std::move(r);
  }
};

// How the driver words a pass's change: "rank 1 cannot <verb> collective #0 of ring 0 [0,1] (...)",
// "<past> although ...", "its <noun> of collective #0 ...", "its collective #0 is c_allgather, not
// <wanted>".
struct ChangeWording {
  std::string verb;    // "fuse", "re-gather"
  std::string past;    // "fused", "re-gathered"
  std::string noun;    // "fusion", "re-gather"
  std::string wanted;  // "an all-reduce", "a forward all-gather"
};

// An aligned ring position whose present members all matched and agree: candidate indices in the
// ring's member (group) order.
struct AgreedPosition {
  const Ring* ring = nullptr;
  size_t k = 0;
  std::vector<size_t> members;
};

struct DecideOptions {
  // The pass's own checks of an agreed position (a size threshold, a count limit), called in ring
  // order (the job's groups as listed, then rings no group declares), then issue order; a Refusal
  // with a code refuses every member with it.
  std::function<Refusal(const AgreedPosition&)> check = nullptr;
  // Testing only: change each matched candidate by its own checks, ignoring its peers (note
  // agreement-skipped); the verifier must then stop the desynchronised ring.
  bool skip_agreement = false;
  std::string skip_agreement_option;  // how the option reads in the note: "unsafe-skip-agreement=true"
};

class CandidateTable {
 public:
  CandidateTable(const Job& job, ChangeWording wording);

  // Enters `op` (a collective of `coll`): matched by this rank's checks, or refused by `own`
  // (empty for an op that is no candidate at all). Add in program, block, op order: the order of
  // counts and explain records.
  size_t add(Op& op, const Collective& coll, bool counted, bool matched, Refusal own);
  // add()'s entry at index `i` < size() of a table resized beforehand; calls for different
  // programs may run on threads of their own (each writes its entries and its program's index).
  void set(size_t i, Op& op, const Collective& coll, bool counted, bool matched, Refusal own);
  size_t size() const { return states_.size(); }
  void resize(size_t n) { states_.resize(n); }
  CandidateState& state(size_t i) { return states_[i]; }
  const CandidateState& state(size_t i) const { return states_[i]; }
  // The candidate of `op`, or null.
  std::optional<size_t> indexOf(const Op& op) const;

  // Decides every aligned position of every ring, every member or none: a member whose
  // collective #k is not matched refuses it for all (peer-refused, naming it and its reason);
  // positions all members agree on pass opts.check, then change on every member (noting
  // peers-absent when members are not in the file). Returns the positions that changed.
  std::vector<AgreedPosition> decide(const RingOrder& rings, const DecideOptions& opts = {});
  // Refuses every member of `pos` with `why`.
  void refuseAll(const AgreedPosition& pos, const Refusal& why);

  // For passes that insert a collective per member, `planned(candidate)`: the new op and where
  // it goes. Every member's new op must follow the same number of the ring's collectives; the
  // ring-order refusal when not (read from where each goes, `before(candidate)`, only).
  using PlanOf = std::function<PlannedCollective(size_t candidate)>;
  using InsertedBefore = absl::FunctionRef<const Op*(size_t candidate)>;
  Refusal sameInsertionSlot(const AgreedPosition& pos, InsertedBefore before) const;
  // Then the whole insertion set of each ring, of the positions' members still changing: the
  // order the rewrite produces (by insertion point, then k) must be the same on every member
  // (RingOrder::checkInsertions); a divergence refuses every insertion of that ring (ring-order).
  void checkInsertions(const RingOrder& rings, const std::vector<AgreedPosition>& positions, const PlanOf& planned);

  // Counts every counted candidate in ctx (candidates, rewritten, refused by code, notes) and
  // records why, in table order.
  void report(PassContext& ctx) const;

 private:
  void decidePosition(const Ring& ring, size_t k, const DecideOptions& opts, std::vector<AgreedPosition>& agreed);
  const Job& job_;
  ChangeWording wording_;
  std::vector<CandidateState> states_;
  std::vector<std::vector<int32_t>> index_;  // [program position][op id] -> states_ index, or -1
};

// A pass's candidate table with its matches: the match of candidate i is match(i) when matched.
template <class Match>
class CollectiveRewriteDriver : public CandidateTable {
 public:
  using CandidateTable::CandidateTable;
  size_t add(Op& op, const Collective& coll, bool counted, std::optional<Match> match, Refusal own) {
    size_t i = CandidateTable::add(op, coll, counted, match.has_value(), match ? Refusal{} : std::move(own));
    matches_.push_back(std::move(match));
    return i;
  }
  Match& match(size_t i) { return *matches_[i]; }
  const Match& match(size_t i) const { return *matches_[i]; }
  // What a pass's matcher found of one collective: an add()'s arguments.
  struct Matched {
    Op* op;
    Collective coll;
    bool counted;
    std::optional<Match> match;
    Refusal refusal;
  };
  // Runs match_program(program, found) for every program, each on a thread of its own (a matcher
  // reads only its own program), then enters what each appended to `found` in program order (the
  // table a serial walk of the job would have built), each program's entries on a thread again.
  template <class MatchProgram>
  void addPerProgram(Job& job, MatchProgram&& match_program) {
    std::vector<std::vector<Matched>> found(job.programs.size());
    parallelFor(job.programs.size(), [&](size_t i) { match_program(*job.programs[i], found[i]); });
    std::vector<size_t> first(found.size() + 1, size());
    for (size_t i = 0; i < found.size(); ++i) first[i + 1] = first[i] + found[i].size();
    CandidateTable::resize(first.back());
    matches_.resize(first.back());
    parallelFor(found.size(), [&](size_t p) {
      for (size_t k = 0; k < found[p].size(); ++k) {
        Matched& m = found[p][k];
        const bool matched = m.match.has_value();
        set(first[p] + k, *m.op, m.coll, m.counted, matched, matched ? Refusal{} : std::move(m.refusal));
        matches_[first[p] + k] = std::move(m.match);
      }
    });
  }
  // Calls rewrite(match(i)) for every candidate decided to change, in table order within each
  // program, each program's on a thread of its own (editInParallel: a rewrite edits only its
  // candidate's program); returns how many.
  template <class Rewrite>
  size_t rewriteChanged(Job& job, Rewrite&& rewrite) {
    std::vector<std::vector<size_t>> by_program(job.programs.size());
    size_t changed = 0;
    for (size_t i = 0; i < size(); ++i)
      if (state(i).change) by_program[state(i).op->block->program->position].push_back(i), ++changed;
    if (changed)
      editInParallel(job, by_program.size(), [&](size_t p) {
        for (size_t i : by_program[p]) rewrite(match(i));
      });
    return changed;
  }

 private:
  std::vector<std::optional<Match>> matches_;
};

// For passes that move collectives: "" when every ring's collective order in `job` is identical
// on every member (the same signatures, and the same permutation of the aligned positions `before`
// recorded), else a ring-order refusal saying where it differs. `facts`, when given, supplies each
// op's ring and signature (RingOrder's cache).
Refusal checkRingOrders(const Job& job, const RingOrder& before, RingFacts* facts = nullptr);

}  // namespace spopt
