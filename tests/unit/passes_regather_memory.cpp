// regather-activations' memory model (passes/regather_memory.h): the segment tree's range additions
// and peak against a plain array on random updates, including undo (the auto policy's revert).
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "passes/regather_memory.h"

using namespace spopt;

TEST_CASE("LiveBytesTree matches a plain array under random range additions and undo", "[regather]") {
  std::mt19937 rng(7);
  for (size_t n : {1u, 2u, 5u, 64u, 100u, 1000u}) {
    std::vector<int64_t> live(n);
    for (auto& v : live) v = int64_t(rng() % 1000);
    LiveBytesTree tree(live);
    REQUIRE(tree.peak() == *std::max_element(live.begin(), live.end()));
    std::vector<std::tuple<int64_t, int64_t, int64_t>> applied;
    for (int step = 0; step < 300; ++step) {
      int64_t lo = int64_t(rng() % (n + 2)) - 1, hi = int64_t(rng() % (n + 2)) - 1;  // out of range: clamped
      int64_t d = int64_t(rng() % 401) - 200;
      bool undo = !applied.empty() && rng() % 3 == 0;
      if (undo) {
        std::tie(lo, hi, d) = applied.back();
        applied.pop_back();
        d = -d;
      } else {
        applied.emplace_back(lo, hi, d);
      }
      tree.add(lo, hi, d);
      for (int64_t i = std::max<int64_t>(lo, 0); i <= std::min<int64_t>(hi, int64_t(n) - 1); ++i) live[size_t(i)] += d;
      REQUIRE(tree.peak() == *std::max_element(live.begin(), live.end()));
    }
  }
}

TEST_CASE("LiveBytesTree of an empty block has peak 0", "[regather]") {
  LiveBytesTree tree({});
  tree.add(0, 10, 5);
  REQUIRE(tree.peak() == 0);
}
