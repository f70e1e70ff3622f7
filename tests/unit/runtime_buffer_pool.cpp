// Tensor buffers from the pool (runtime/buffer_pool.h): aligned, zeroed even when reused, reused.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/buffer_pool.h"
#include "runtime/tensor.h"

using namespace spopt;
using namespace spopt::rt;

TEST_CASE("pooled buffers are aligned, zeroed when reused, and reused", "[runtime][buffer_pool]") {
  for (size_t bytes : {size_t(100), size_t(70) << 10, size_t(300) << 10, size_t(3) << 20, (size_t(5) << 20) + 12345}) {
    BufferPoolStats before = bufferPoolStats();
    for (int round = 0; round < 3; ++round) {
      auto buf = allocateBuffer(bytes);
      REQUIRE(buf);
      CHECK(reinterpret_cast<uintptr_t>(buf.get()) % 64 == 0);
      const auto* p = reinterpret_cast<const unsigned char*>(buf.get());
      size_t nonzero = 0;
      for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
      CHECK(nonzero == 0);
      std::memset(buf.get(), 0xab, bytes);  // garbage for the next round to see if not zeroed
    }
    if (bytes >= (size_t(64) << 10) && bufferPoolActive()) CHECK(bufferPoolStats().reused >= before.reused + 2);
  }
  // Buffers alive together are distinct and keep their contents.
  std::vector<std::shared_ptr<std::byte>> live;
  for (int i = 0; i < 8; ++i) {
    live.push_back(allocateBuffer(size_t(200) << 10));
    std::memset(live.back().get(), i + 1, size_t(200) << 10);
  }
  for (int i = 0; i < 8; ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(live[size_t(i)].get());
    CHECK(p[0] == i + 1);
    CHECK(p[(size_t(200) << 10) - 1] == i + 1);
  }
}

TEST_CASE("a tensor from a reused buffer starts at zero", "[runtime][buffer_pool]") {
  { Tensor t(DType::Float32, {512, 512}); std::fill(t.data<float>(), t.data<float>() + t.numel(), 3.0f); }
  Tensor u(DType::Float32, {512, 512});
  double sum = 0;
  for (int64_t i = 0; i < u.numel(); ++i) sum += std::abs(u.data<float>()[i]);
  CHECK(sum == 0);
}

TEST_CASE("fresh buffers are cut from a reservation, zeroed, before new memory is mapped", "[runtime][buffer_pool]") {
  if (!bufferPoolActive()) return;
  // A size class no other test uses, so the idle list cannot serve it.
  const size_t bytes = (size_t(11) << 20) + 4096;
  BufferPoolStats before = bufferPoolStats();
  reserveBuffers(size_t(24) << 20, 2);
  BufferPoolStats reserved = bufferPoolStats();
  CHECK(reserved.reserved == before.reserved + (size_t(24) << 20));
  CHECK(reserved.mapped == before.mapped + (size_t(24) << 20));
  {
    auto buf = allocateBuffer(bytes);
    const auto* p = reinterpret_cast<const unsigned char*>(buf.get());
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i += 512) nonzero += p[i] != 0;
    CHECK(nonzero == 0);
    BufferPoolStats after = bufferPoolStats();
    CHECK(after.fresh == reserved.fresh + 1);
    CHECK(after.mapped == reserved.mapped);  // nothing new mapped
    CHECK(after.reserved < reserved.reserved);
    std::memset(buf.get(), 0xcd, bytes);
  }
  // A second buffer of the class is the first one back (from the idle list), zeroed.
  auto again = allocateBuffer(bytes);
  CHECK(reinterpret_cast<const unsigned char*>(again.get())[bytes - 1] == 0);
}
