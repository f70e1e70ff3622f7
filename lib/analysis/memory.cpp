#include "analysis/memory.h"

#include <algorithm>

namespace spopt {

int64_t varBytes(const Var& v) {
  int64_t n = v.numel();
  return n < 0 ? 0 : n * int64_t(dtypeSize(v.dtype));
}

MemoryProfile profileMemory(const Program& p, const Liveness& live, size_t top_n) {
  MemoryProfile m;
  const Block* b = entryBlockOf(p);
  if (!b) return m;
  const BlockLiveness& bl = live.of(*b);
  for (const auto& v : b->vars) {
    if (v->removed) continue;
    if (!varBytesKnown(*v)) m.unknown_size.push_back(v.get());
    if (v->persistable) m.persistable_bytes += varBytes(*v);
  }
  int64_t current = m.persistable_bytes;
  for (const Var* v : bl.live_on_entry) current += varBytes(*v);
  m.peak_bytes = current;
  size_t n = bl.release_after.size();
  m.live_at.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (const Var* v : bl.born_at[i]) current += varBytes(*v);
    m.live_at[i] = current;
    if (m.peak_op < 0 || current > m.peak_bytes) {  // live_at[0] >= the starting bytes
      m.peak_bytes = current;
      m.peak_op = int64_t(i);
    }
    for (const Var* v : bl.release_after[i]) current -= varBytes(*v);
  }
  // The live set at the peak: replay the births and deaths up to it.
  std::vector<char> alive(p.next_var_id, 0);
  for (const auto& v : b->vars)
    if (!v->removed && v->persistable) alive[v->id] = 1;
  for (const Var* v : bl.live_on_entry) alive[v->id] = 1;
  for (int64_t i = 0; i <= m.peak_op; ++i) {
    for (const Var* v : bl.born_at[size_t(i)]) alive[v->id] = 1;
    if (i < m.peak_op)
      for (const Var* v : bl.release_after[size_t(i)]) alive[v->id] = 0;
  }
  for (const auto& v : b->vars)
    if (!v->removed && alive[v->id]) m.largest_at_peak.emplace_back(v.get(), varBytes(*v));
  std::sort(m.largest_at_peak.begin(), m.largest_at_peak.end(), [](const auto& a, const auto& c) {
    return a.second != c.second ? a.second > c.second : a.first->id < c.first->id;
  });
  if (m.largest_at_peak.size() > top_n) m.largest_at_peak.resize(top_n);
  return m;
}

MemoryProfile profileMemory(const Program& p, size_t top_n) { return profileMemory(p, computeProgramLiveness(p), top_n); }

}  // namespace spopt
