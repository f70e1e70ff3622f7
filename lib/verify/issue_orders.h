#pragma once
// The issue orders a check kept (verifier.h IssueOrders), and their update from a journaled pass's
// edits: what the ring order check after the pass reads instead of every program's walk.
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "analysis/ring_order.h"
#include "ir/ir.h"
#include "verify/program_checker.h"
#include "verify/verifier.h"

namespace spopt {

struct IssueOrders::State {
  const Job* job = nullptr;  // the job described
  // [program position]: ring -> its communicating collectives in issue order (no empty lists).
  std::vector<std::map<int64_t, std::vector<IssuedCollective>>> rings;
  std::vector<char> p2p;  // [program position]: it issues a send or receive (or did: an erase keeps it)
};

// The edits as the update reads them: `edited` program `program`'s ops to read again (inserted or
// edited, and the readers and writers of its touched vars; none erased), `edited_anywhere` those
// of every program, `moved_rings` the rings of its moved collectives.
struct ProgramEdits {
  const std::vector<const Op*>& edited;
  const absl::flat_hash_set<const Op*>& edited_anywhere;
  const std::set<int64_t>& moved_rings;
};
// Brings program `program`'s orders in `s` up to date: the lists lose the erased and edited ops,
// gain the edited ops that communicate, and are put back in issue order where one gained or moved
// a collective. Returns the rings whose lists changed. Reads and renumbers only that program.
// An entry is dropped by its address alone, never read: an erased op's address may since hold a
// new op of any program (EditJournal::erased then no longer lists it, and that program's edits do).
std::set<int64_t> updateIssueOrders(IssueOrders::State& s, size_t program, const EditJournal& j, const ProgramEdits& edits);

// The ops of `s`'s lists, as a RingOrder is built from them.
IssueLists issueLists(const IssueOrders::State& s);

}  // namespace spopt
