#include "analysis/memory.h"

#include <algorithm>
#include <limits>

namespace spopt {

int64_t varBytes(const Var& v) {
  if (!varBytesKnown(v)) return 0;
  auto b = v.byteSize();
  return b ? *b : std::numeric_limits<int64_t>::max();
}

namespace {
// Totals are kept in 128 bits and clamped when stored: a job the verifier has not seen (or many
// vars near the int64 limit) may sum past int64, and a wrapped total would look small.
using Wide = __int128;
int64_t clamp(Wide w) { return w > Wide(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max() : int64_t(w); }
}  // namespace

MemoryProfile profileMemory(const Program& p, const Liveness& live, size_t top_n) {
  MemoryProfile m;
  const Block* b = entryBlockOf(p);
  if (!b) return m;
  const BlockLiveness& bl = live.of(*b);
  Wide persistable = 0;
  for (const auto& v : b->vars) {
    if (v->removed) continue;
    if (!varBytesKnown(*v)) m.unknown_size.push_back(v.get());
    if (v->persistable) persistable += varBytes(*v);
  }
  m.persistable_bytes = clamp(persistable);
  Wide current = persistable, peak = 0;
  for (const Var* v : bl.live_on_entry) current += varBytes(*v);
  peak = current;
  size_t n = bl.release_after.size();
  m.live_at.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (const Var* v : bl.born_at[i]) current += varBytes(*v);
    m.live_at[i] = clamp(current);
    if (m.peak_op < 0 || current > peak) {  // live_at[0] >= the starting bytes
      peak = current;
      m.peak_op = int64_t(i);
    }
    for (const Var* v : bl.release_after[i]) current -= varBytes(*v);
  }
  m.peak_bytes = clamp(peak);
  if (top_n == 0) return m;  // passes ask only for the peak: no replay, no sort
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
  auto larger = [](const auto& a, const auto& c) { return a.second != c.second ? a.second > c.second : a.first->id < c.first->id; };
  size_t keep = std::min(top_n, m.largest_at_peak.size());
  std::partial_sort(m.largest_at_peak.begin(), m.largest_at_peak.begin() + ptrdiff_t(keep), m.largest_at_peak.end(), larger);
  m.largest_at_peak.resize(keep);
  return m;
}

int64_t peakBytes(const Program& p, const LivenessOptions& o, std::vector<int32_t>* dies_after) {
  const Block* b = entryBlockOf(p);
  if (!b) return 0;
  Wide start = 0;  // the persistable vars and the inputs: live on entry
  // [i]: bytes born at op i, and released after it. An op's own sums saturate at int64's limit:
  // released bytes reach it only where born bytes did first, so the peak is clamped either way.
  struct Change {
    int64_t born = 0, released = 0;
  };
  auto add = [](int64_t& sum, int64_t bytes) {
    if (__builtin_add_overflow(sum, bytes, &sum)) sum = std::numeric_limits<int64_t>::max();
  };
  const size_t n = b->ops.size();
  std::vector<Change> change(n);
  if (dies_after) dies_after->assign(p.next_var_id, -1);
  forEachEntryBuffer(p, o, [&](const Var& v, int32_t born, int32_t dies) {
    if (dies_after) (*dies_after)[v.id] = dies;
    const int64_t bytes = varBytes(v);
    if (born < 0) start += bytes;
    else add(change[size_t(born)].born, bytes);
    if (dies >= 0) add(change[size_t(dies)].released, bytes);
  });
  Wide current = start, peak = start;
  for (size_t i = 0; i < n; ++i) {
    current += change[i].born;
    peak = i == 0 ? current : std::max(peak, current);
    current -= change[i].released;
  }
  return clamp(peak);
}

MemoryProfile profileMemory(const Program& p, size_t top_n) { return profileMemory(p, computeProgramLiveness(p), top_n); }

}  // namespace spopt
