// support/checked_size.h: products and sums of sizes never wrap; the memory budget's byte-size
// parser; the place a truncated JSON document stops at.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "io/top_level_scan.h"
#include "runtime/memory_budget.h"
#include "support/checked_size.h"

using namespace spopt;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
std::optional<int64_t> numel(std::vector<int64_t> v) { return checkedNumel(v); }
std::optional<int64_t> bytes(std::vector<int64_t> v, size_t e) { return checkedBytes(v, e); }
}  // namespace

TEST_CASE("checkedMul and checkedAdd refuse what wraps int64", "[checked_size]") {
  CHECK(checkedMul(int64_t(1) << 31, int64_t(1) << 31) == (int64_t(1) << 62));
  CHECK_FALSE(checkedMul(int64_t(1) << 32, int64_t(1) << 31));
  CHECK(checkedMul(kMax, 1) == kMax);
  CHECK_FALSE(checkedMul(kMax, 2));
  CHECK_FALSE(checkedMul(-1, 4));  // sizes are never negative
  CHECK(checkedAdd(kMax - 1, 1) == kMax);
  CHECK_FALSE(checkedAdd(kMax, 1));
  CHECK(saturatingAdd(kMax, kMax) == kMax);
  CHECK(saturatingAdd(3, 4) == 7);
}

TEST_CASE("checkedNumel: the product of dims, or nullopt", "[checked_size]") {
  CHECK(numel({}) == 1);  // a scalar
  CHECK(numel({4, 5}) == 20);
  CHECK_FALSE(numel({4, -1}));  // unknown dim
  CHECK_FALSE(numel({int64_t(1) << 40, int64_t(1) << 23}));               // 2^63: one past int64
  CHECK(numel({int64_t(1) << 40, (int64_t(1) << 23) - 1}).has_value());
  CHECK_FALSE(numel({int64_t(1) << 22, int64_t(1) << 22, int64_t(1) << 22}));  // 2^66
  // A zero dim empties the tensor whatever the others are, even past an overflow.
  CHECK(numel({int64_t(1) << 40, int64_t(1) << 40, 0}) == 0);
  CHECK(numel({0, int64_t(1) << 40, int64_t(1) << 40}) == 0);
}

TEST_CASE("checkedBytes: the issue's reproductions overflow, their halves fit", "[checked_size]") {
  const int64_t g31 = int64_t(1) << 31, g30 = int64_t(1) << 30;
  CHECK_FALSE(bytes({g31, g31}, 4));  // 2^62 elements x 4: 2^64 bytes
  CHECK_FALSE(bytes({g31, g30}, 8));  // 2^61 x 8
  CHECK_FALSE(bytes({g31, g30}, 4));  // 2^61 x 4: 2^63, one past int64
  CHECK(bytes({g31, g30 / 4}, 8) == (int64_t(1) << 62));
  CHECK(bytes({3, 5}, 4) == 60);
  CHECK_FALSE(bytes({3, -1}, 4));
}

TEST_CASE("parseByteSize reads 8G, 512M, 1.5GiB and plain bytes", "[checked_size]") {
  CHECK(rt::parseByteSize("4096") == 4096);
  CHECK(rt::parseByteSize("8G") == (int64_t(8) << 30));
  CHECK(rt::parseByteSize("8g") == (int64_t(8) << 30));
  CHECK(rt::parseByteSize("512M") == (int64_t(512) << 20));
  CHECK(rt::parseByteSize("1.5GiB") == (int64_t(3) << 29));
  CHECK(rt::parseByteSize("2KB") == 2048);
  CHECK(rt::parseByteSize("0") == 0);
  CHECK_FALSE(rt::parseByteSize(""));
  CHECK_FALSE(rt::parseByteSize("8X"));
  CHECK_FALSE(rt::parseByteSize("-1"));
  CHECK_FALSE(rt::parseByteSize("G"));
  CHECK_FALSE(rt::parseByteSize("8E"));  // 2^63: past int64
  CHECK(rt::bytesText(int64_t(4) << 40) == "4.0 TiB");
  CHECK(rt::bytesText(100) == "100 B");
}

TEST_CASE("openAtEnd names where a cut document stops", "[checked_size]") {
  CHECK(openAtEnd(R"({"a": {"b": [1, {"c": "x)").pointer == "/a/b/1/c");
  CHECK(openAtEnd(R"({"a": {"b": [1, {"c": "x)").open == '"');
  CHECK(openAtEnd(R"({"a": {"b": 1, )").pointer == "/a");
  CHECK(openAtEnd(R"({"a": {"b": 1)").open == '{');
  CHECK(openAtEnd(R"({"a": [1, 2)").pointer == "/a");
  CHECK(openAtEnd(R"({"a": [1, 2)").open == '[');
  CHECK(openAtEnd(R"({"a": "x\"}"})").open == 0);  // complete: escapes are not quotes
  CHECK(openAtEnd(R"({"a": "x\"}")").open == '{');
  CHECK(openAtEnd(R"({"a": "x\"}")").pointer == "");
}
