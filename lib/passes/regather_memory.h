#pragma once
// regather-activations' memory model of one rank: the entry block's live bytes per op
// (analysis/memory.h's profileMemory, computed once), then each tentative re-gather applied as
// range additions on it, in a segment tree: O(log ops) per change and O(1) for the peak, so the
// `auto` policy stays O(ops + candidates · log ops) instead of re-profiling after every decision.
//
// A re-gather of G (bytes g) from shard S (bytes s) into N (bytes g), with entry-block positions
// ag <= last_fwd < insert <= last_bwd and S's old death d_s, changes the live bytes by
//   -g on (last_fwd, death(G)]   G now dies after its last forward use
//   +g on [insert, last_bwd]     N lives from the re-gather to its last backward reader
//   +s on (d_s, insert)          S must live until the re-gather (nothing when it already does)
// The new op's own slot is not modelled: it holds S, N and what is live before the op it precedes,
// which is at most that op's slot plus S. The pass re-profiles the rewritten program at the end
// (the peaks --stats reports).
#include <algorithm>
#include <cstdint>
#include <vector>

namespace spopt {

class LiveBytesTree {
 public:
  explicit LiveBytesTree(const std::vector<int64_t>& live_at) : n_(live_at.size()) {
    size_ = 1;
    while (size_ < n_) size_ *= 2;
    max_.assign(2 * size_, INT64_MIN / 4);
    add_.assign(2 * size_, 0);
    for (size_t i = 0; i < n_; ++i) max_[size_ + i] = live_at[i];
    for (size_t i = size_ - 1; i >= 1; --i) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  // Adds `delta` to every op in [lo, hi] (clamped; empty when lo > hi).
  void add(int64_t lo, int64_t hi, int64_t delta) {
    lo = std::max<int64_t>(lo, 0);
    hi = std::min<int64_t>(hi, int64_t(n_) - 1);
    if (lo > hi || delta == 0) return;
    add(1, 0, size_ - 1, size_t(lo), size_t(hi), delta);
  }
  int64_t peak() const { return n_ ? max_[1] : 0; }

 private:
  void add(size_t node, size_t l, size_t r, size_t lo, size_t hi, int64_t d) {
    if (hi < l || r < lo) return;
    if (lo <= l && r <= hi) {
      max_[node] += d;
      add_[node] += d;
      return;
    }
    size_t mid = (l + r) / 2;
    add(2 * node, l, mid, lo, hi, d);
    add(2 * node + 1, mid + 1, r, lo, hi, d);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  size_t n_, size_ = 1;
  std::vector<int64_t> max_, add_;
};

}  // namespace spopt
