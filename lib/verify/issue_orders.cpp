#include "verify/issue_orders.h"

#include <algorithm>


#include "ops/op_def.h"

namespace spopt {

std::set<int64_t> updateIssueOrders(IssueOrders::State& s, size_t program, const EditJournal& j, const ProgramEdits& edits) {
  auto& lists = s.rings[program];
  std::set<int64_t> changed, unsorted(edits.moved_rings.begin(), edits.moved_rings.end());
  for (auto& [ring, list] : lists) {
    const size_t before = list.size();
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const IssuedCollective& ic) { return j.erased.contains(ic.op) || edits.edited_anywhere.contains(ic.op); }),
               list.end());
    if (list.size() != before) changed.insert(ring);
  }
  for (const Op* op : edits.edited) {
    ResolvedOp r = resolveOp(op->type);
    if (r && r.def->p2p) s.p2p[program] = 1;
    if (!r || !r.def->collective) continue;
    if (auto c = asCollective(*op); c && communicates(*c)) {
      lists[c->ring_id].emplace_back(*op, *c);
      unsorted.insert(c->ring_id);
    }
  }
  // Issue order is blocks order, then ops order (ProgramChecker's walk).
  for (int64_t ring : unsorted) {
    auto it = lists.find(ring);
    if (it == lists.end()) continue;
    std::vector<std::pair<std::pair<size_t, size_t>, IssuedCollective>> keyed;
    keyed.reserve(it->second.size());
    for (IssuedCollective& ic : it->second) keyed.push_back({{ic.op->block->position, ic.op->block->indexOf(ic.op)}, std::move(ic)});
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    it->second.clear();
    for (auto& [key, ic] : keyed) it->second.push_back(std::move(ic));
    changed.insert(ring);
  }
  std::erase_if(lists, [](const auto& entry) { return entry.second.empty(); });
  return changed;
}

IssueLists issueLists(const IssueOrders::State& s) {
  IssueLists out(s.rings.size());
  for (size_t i = 0; i < s.rings.size(); ++i)
    for (const auto& [ring, list] : s.rings[i]) {
      std::vector<const Op*>& ops = out[i][ring];
      ops.reserve(list.size());
      for (const IssuedCollective& ic : list) ops.push_back(ic.op);
    }
  return out;
}

}  // namespace spopt
