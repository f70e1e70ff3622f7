// The shape helpers the verifier and the replay kernels share (ops/shape_math.h).
#include <catch2/catch.hpp>

#include "ops/shape_math.h"

using namespace spopt;

TEST_CASE("alignBroadcast follows Paddle's axis rule", "[op_shape_rules]") {
  std::string why;
  auto b = alignBroadcast({4, 5}, {5}, -1, &why);
  REQUIRE(b);
  CHECK(b->out == ShapeDims{4, 5});
  CHECK(b->y == ShapeDims{1, 5});
  b = alignBroadcast({2, 3, 4}, {3}, 1, &why);  // Y lines up at dim 1
  REQUIRE(b);
  CHECK(b->y == ShapeDims{1, 3, 1});
  b = alignBroadcast({2, 3}, {3, 1}, 1, &why);  // a trailing 1 that does not fit is dropped
  REQUIRE(b);
  CHECK(b->out == ShapeDims{2, 3});
  CHECK_FALSE(alignBroadcast({4, 5}, {3}, -1, &why));
  CHECK(why == "dim 1 differs");
  CHECK_FALSE(alignBroadcast({4, 5}, {5}, 2, &why));
  CHECK(why == "axis out of range");
}

TEST_CASE("resolveReshape copies 0s, infers one -1 and keeps the element count", "[op_shape_rules]") {
  std::string why;
  CHECK(resolveReshape({4, 6}, {0, -1, 2}, &why) == ShapeDims{4, 3, 2});
  CHECK_FALSE(resolveReshape({4, 6}, {5, 5}, &why));
  CHECK(why == "shape [5,5] does not hold the 24 elements of X [4,6]");
  CHECK_FALSE(resolveReshape({4, 6}, {-1, -1}, &why));
  CHECK(why == "shape [-1,-1] has more than one -1");
  CHECK_FALSE(resolveReshape({4}, {0, 0}, &why));
  CHECK_FALSE(resolveReshape({4, 6}, {5, -1}, &why));
  CHECK_FALSE(resolveReshape({4, 6}, {-2, 12}, &why));
}

TEST_CASE("resolvePermutation and broadcastBatchDims", "[op_shape_rules]") {
  CHECK(resolvePermutation({1, -2}, 2) == ShapeDims{1, 0});
  CHECK_FALSE(resolvePermutation({0, 0}, 2));
  CHECK_FALSE(resolvePermutation({0, 1}, 3));
  CHECK_FALSE(resolvePermutation({0, 2}, 2));
  CHECK(broadcastBatchDims({1, 3}, {2, 1}) == ShapeDims{2, 3});
  CHECK(broadcastBatchDims({}, {4}) == ShapeDims{4});
  CHECK_FALSE(broadcastBatchDims({2}, {3}));
}

TEST_CASE("dtypeStorage groups dtypes as replay stores them", "[op_shape_rules]") {
  CHECK(dtypeStorage(DType::Float16) == DTypeStorage::F32);
  CHECK(dtypeStorage(DType::BFloat16) == DTypeStorage::F32);
  CHECK(dtypeStorage(DType::Float64) == DTypeStorage::F64);
  CHECK(dtypeStorage(DType::Int32) == DTypeStorage::I64);
  CHECK(dtypeStorage(DType::Bool) == DTypeStorage::U8);
}
