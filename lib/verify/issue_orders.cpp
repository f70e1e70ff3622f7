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
  // A schedule that moves a ring's collectives mostly keeps their order: sorted already, the list stays.
  for (int64_t ring : unsorted) {
    auto it = lists.find(ring);
    if (it == lists.end()) continue;
    changed.insert(ring);
    std::vector<std::pair<size_t, size_t>> keys;
    keys.reserve(it->second.size());
    for (const IssuedCollective& ic : it->second) keys.push_back(issueKey(*ic.op));
    if (std::is_sorted(keys.begin(), keys.end())) continue;
    std::vector<size_t> order(keys.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    std::vector<IssuedCollective> sorted;
    sorted.reserve(order.size());
    for (size_t k : order) sorted.push_back(std::move(it->second[k]));
    it->second = std::move(sorted);
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
