// The local backend's collectives: semantics per ops.md, permuted sub-groups, deterministic
// reduction order, and errors (mismatch, missing collective, timeout, abort) instead of hangs.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "runtime/communicator.h"
#include "runtime/local_backend.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::rt;

namespace {

Job jobWithGroups(std::vector<std::pair<int64_t, std::vector<int64_t>>> groups) {
  Job job;
  job.path = "t.json";
  for (auto& [ring, ranks] : groups) job.groups.push_back(ProcessGroup{ring, ranks, {}});
  return job;
}

OpDesc desc(const char* type, int64_t rank, int64_t index = 0) { return OpDesc{type, rank, 0, index, "t.json", "/programs/0/blocks/0/ops/0"}; }

// Rank r's input: distinct, non-zero values of varying magnitude so order matters in float32.
Tensor input(int64_t rank, std::vector<int64_t> shape) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float((rank + 1) * 1.37 + i * 0.11) * (i % 3 == 0 ? 1e4f : 1e-3f);
  return t;
}

using Results = std::map<int64_t, Tensor>;

// Runs `body(rank, comm, out)` on every rank with the local backend; returns each rank's out.
template <typename F>
Results runRanks(const Job& job, std::vector<int64_t> ranks, F body, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto backend = makeLocalBackend({timeout});
  std::mutex mu;
  Results outs;
  backend->run(ranks, [&](int64_t rank, CommFactory& comms) {
    auto comm = comms.make(job);
    Tensor out = body(rank, *comm);
    std::lock_guard lk(mu);
    outs[rank] = out;
    return std::string();
  });
  return outs;
}

std::string communicatorErrorOf(std::function<void()> f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("all-reduce sums in group order, bit-identical on every rank and every run", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {2, 0, 3, 1}}});
  for (int run = 0; run < 5; ++run) {
    auto outs = runRanks(job, {0, 1, 2, 3}, [](int64_t r, Communicator& c) {
      Tensor in = input(r, {3, 4}), out(DType::Float32, {3, 4});
      c.allReduce(0, in, out, ReduceOp::Sum, desc("c_allreduce_sum", r));
      return out;
    });
    for (int64_t i = 0; i < 12; ++i) {
      float want = input(2, {3, 4}).data<float>()[i];  // group order: 2, 0, 3, 1
      for (int64_t r : {0, 3, 1}) want += input(r, {3, 4}).data<float>()[i];
      for (int64_t r = 0; r < 4; ++r) REQUIRE(std::memcmp(&outs[r].data<float>()[i], &want, 4) == 0);
    }
  }
}

TEST_CASE("all-reduce max, min, prod and avg", "[runtime][comm]") {
  Job job = jobWithGroups({{5, {0, 1, 2}}});
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod, ReduceOp::Avg}) {
    auto outs = runRanks(job, {0, 1, 2}, [op](int64_t r, Communicator& c) {
      Tensor in(DType::Float64, {4}), out(DType::Float64, {4});
      for (int i = 0; i < 4; ++i) in.data<double>()[i] = (i % 2 ? -1.0 : 1.0) * double(r + 1 + i);
      c.allReduce(5, in, out, op, desc("all_reduce", r));
      return out;
    });
    for (int i = 0; i < 4; ++i) {
      double s = i % 2 ? -1.0 : 1.0, v0 = s * (1 + i), v1 = s * (2 + i), v2 = s * (3 + i);
      double want = op == ReduceOp::Max ? std::max({v0, v1, v2})
                    : op == ReduceOp::Min ? std::min({v0, v1, v2})
                    : op == ReduceOp::Prod ? v0 * v1 * v2
                                           : (v0 + v1 + v2) / 3;
      for (int64_t r = 0; r < 3; ++r) REQUIRE(outs[r].data<double>()[i] == Approx(want));
    }
  }
}

TEST_CASE("reduce-scatter hands each rank the chunk of its position in a permuted sub-group", "[runtime][comm]") {
  // World of 4; ring 7 holds ranks 3 and 1 in that order: rank 3 gets chunk 0, rank 1 chunk 1.
  Job job = jobWithGroups({{0, {0, 1, 2, 3}}, {7, {3, 1}}});
  auto outs = runRanks(job, {1, 3}, [](int64_t r, Communicator& c) {
    Tensor in = input(r, {4, 2}), out(DType::Float32, {2, 2});
    c.reduceScatter(7, in, out, desc("c_reducescatter", r));
    return out;
  });
  for (auto [rank, chunk] : {std::pair{3, 0}, std::pair{1, 1}})
    for (int64_t i = 0; i < 4; ++i) {
      float want = input(3, {4, 2}).data<float>()[chunk * 4 + i] + input(1, {4, 2}).data<float>()[chunk * 4 + i];
      REQUIRE(outs[rank].data<float>()[i] == want);
    }
}

TEST_CASE("all-gather concatenates along axis 0 in group order, broadcast copies the root's input", "[runtime][comm]") {
  Job job = jobWithGroups({{1, {2, 0, 1}}});
  auto gathered = runRanks(job, {0, 1, 2}, [](int64_t r, Communicator& c) {
    Tensor in = input(r, {1, 3}), out(DType::Float32, {3, 3});
    c.allGather(1, in, out, desc("c_allgather", r));
    return out;
  });
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t piece = 0; piece < 3; ++piece)
      for (int64_t i = 0; i < 3; ++i) REQUIRE(gathered[r].data<float>()[piece * 3 + i] == input(std::vector<int64_t>{2, 0, 1}[size_t(piece)], {1, 3}).data<float>()[i]);
  auto bcast = runRanks(job, {0, 1, 2}, [](int64_t r, Communicator& c) {
    Tensor in = input(r, {5}), out(DType::Float32, {5});
    c.broadcast(1, in, out, /*root rank*/ 1, desc("c_broadcast", r));
    return out;
  });
  for (int64_t r = 0; r < 3; ++r) REQUIRE(std::memcmp(bcast[r].raw(), input(1, {5}).raw(), 20) == 0);
}

TEST_CASE("reduce sums in group order on the root, the other ranks keep their input", "[runtime][comm]") {
  Job job = jobWithGroups({{1, {2, 0, 1}}});
  auto outs = runRanks(job, {0, 1, 2}, [](int64_t r, Communicator& c) {
    Tensor in = input(r, {6}), out(DType::Float32, {6});
    c.reduce(1, in, out, /*root rank*/ 0, desc("c_reduce_sum", r));
    return out;
  });
  for (int64_t i = 0; i < 6; ++i) {
    float want = input(2, {6}).data<float>()[i];  // group order: 2, 0, 1
    for (int64_t r : {0, 1}) want += input(r, {6}).data<float>()[i];
    REQUIRE(std::memcmp(&outs[0].data<float>()[i], &want, 4) == 0);
  }
  for (int64_t r : {1, 2}) REQUIRE(std::memcmp(outs[r].raw(), input(r, {6}).raw(), 24) == 0);
  // A root outside the ring is an error, not a hang.
  Job small = jobWithGroups({{3, {0, 1}}});
  std::string err = communicatorErrorOf([&] {
    runRanks(small, {0, 1}, [](int64_t r, Communicator& c) {
      Tensor in = input(r, {2}), out(DType::Float32, {2});
      c.reduce(3, in, out, /*root rank*/ 5, desc("c_reduce_sum", r));
      return out;
    });
  });
  REQUIRE_THAT(err, Catch::Contains("root 5 is not a member of ring 3"));
}

TEST_CASE("a mismatched collective is an error naming both ranks and ops, not a hang", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1}}});
  auto start = std::chrono::steady_clock::now();
  std::string err = communicatorErrorOf([&] {
    runRanks(job, {0, 1}, [](int64_t r, Communicator& c) {
      Tensor in = input(r, {4, 2});
      if (r == 0) {
        Tensor out(DType::Float32, {4, 2});
        c.allReduce(0, in, out, ReduceOp::Sum, desc("c_allreduce_sum", 0, 3));
        return out;
      }
      Tensor out(DType::Float32, {8, 2});
      c.allGather(0, in, out, desc("c_allgather", 1, 5));
      return out;
    });
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK_THAT(err, Catch::Contains("collective mismatch on ring 0 at collective #0"));
  CHECK_THAT(err, Catch::Contains("rank 0 issued all-reduce float32 x8 reduce_type 0"));
  CHECK_THAT(err, Catch::Contains("c_allreduce_sum (rank 0, block 0, op 3)"));
  CHECK_THAT(err, Catch::Contains("rank 1 issued all-gather float32 x8 from c_allgather (rank 1, block 0, op 5)"));
}

TEST_CASE("a size or dtype mismatch is caught too", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1}}});
  std::string err = communicatorErrorOf([&] {
    runRanks(job, {0, 1}, [](int64_t r, Communicator& c) {
      Tensor in(r == 0 ? DType::Float32 : DType::Float64, {4}), out(r == 0 ? DType::Float32 : DType::Float64, {4});
      c.allReduce(0, in, out, ReduceOp::Sum, desc("c_allreduce_sum", r));
      return out;
    });
  });
  CHECK_THAT(err, Catch::Contains("float32 x4") && Catch::Contains("float64 x4"));
}

TEST_CASE("a rank that ends without issuing the collective fails the waiting rank at once", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1}}});
  auto start = std::chrono::steady_clock::now();
  std::string err = communicatorErrorOf([&] {
    runRanks(job, {0, 1}, [](int64_t r, Communicator& c) {
      Tensor in = input(r, {2}), out(DType::Float32, {2});
      if (r == 0) c.allReduce(0, in, out, ReduceOp::Sum, desc("c_allreduce_sum", 0));
      c.finish();
      return out;
    });
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK_THAT(err, Catch::Contains("rank 1 ended its program without issuing collective #0 on ring 0"));
}

TEST_CASE("every wait has a timeout", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1}}});
  auto start = std::chrono::steady_clock::now();
  std::string err = communicatorErrorOf([&] {
    runRanks(
        job, {0, 1},
        [](int64_t r, Communicator& c) {
          Tensor in = input(r, {2}), out(DType::Float32, {2});
          if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // late, then aborted
          c.allReduce(0, in, out, ReduceOp::Sum, desc("c_allreduce_sum", r));
          return out;
        },
        std::chrono::milliseconds(200));
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK_THAT(err, Catch::Contains("c_allreduce_sum (rank 0, block 0, op 0): timed out after 0.200 s waiting on ring 0 collective #0 for rank 1"));
}

TEST_CASE("a failing rank stops the others with its own error", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1, 2}}});
  auto start = std::chrono::steady_clock::now();
  std::string err = communicatorErrorOf([&] {
    runRanks(job, {0, 1, 2}, [](int64_t r, Communicator& c) -> Tensor {
      if (r == 2) throw InputError("t.json", "/programs/2", "kernel failed on rank 2");
      Tensor in = input(r, {2}), out(DType::Float32, {2});
      c.allReduce(0, in, out, ReduceOp::Sum, desc("c_allreduce_sum", r));
      return out;
    });
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(err == "t.json: /programs/2: kernel failed on rank 2");
}

TEST_CASE("startTogether lets no rank start its step before every rank made its inputs", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1, 2}}});
  using Clock = std::chrono::steady_clock;
  std::mutex mu;
  std::map<int64_t, Clock::time_point> left;
  const auto t0 = Clock::now();
  runRanks(job, {0, 1, 2}, [&](int64_t r, Communicator& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * r));  // rank 2 makes its inputs last
    c.startTogether();
    std::lock_guard lk(mu);
    left[r] = Clock::now();
    return Tensor();
  });
  for (int64_t r : {0, 1, 2}) CHECK(left[r] - t0 >= std::chrono::milliseconds(200));
}

TEST_CASE("startTogether: a rank that fails or has nothing to run does not leave the others waiting", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1, 2}}});
  auto start = std::chrono::steady_clock::now();
  std::string err = communicatorErrorOf([&] {
    runRanks(job, {0, 1, 2}, [](int64_t r, Communicator& c) -> Tensor {
      if (r == 2) throw InputError("t.json", "/programs/2", "rank 2 could not make its inputs");
      c.startTogether();
      return Tensor();
    });
  });
  CHECK(err == "t.json: /programs/2: rank 2 could not make its inputs");
  // A rank that ends its program without a step (nothing to run) counts as arrived.
  runRanks(job, {0, 1, 2}, [](int64_t r, Communicator& c) {
    if (r == 1) c.finish();
    else c.startTogether();
    return Tensor();
  });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("startTogether has a timeout", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1}}});
  std::string err = communicatorErrorOf([&] {
    runRanks(
        job, {0, 1},
        [](int64_t r, Communicator& c) {
          if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // late, then aborted
          c.startTogether();
          return Tensor();
        },
        std::chrono::milliseconds(200));
  });
  CHECK_THAT(err, Catch::Contains("t.json: rank 0: timed out after 0.200 s waiting for the other ranks to make their inputs (rank 1)"));
}

TEST_CASE("collective shapes are checked against the rule", "[runtime][comm]") {
  Job job = jobWithGroups({{0, {0, 1}}});
  std::string err = communicatorErrorOf([&] {
    runRanks(job, {0, 1}, [](int64_t r, Communicator& c) {
      Tensor in = input(r, {3, 2}), out(DType::Float32, {1, 2});
      c.reduceScatter(0, in, out, desc("c_reducescatter", r));
      return out;
    });
  });
  CHECK_THAT(err, Catch::Contains("axis 0 of the input (3) is not divisible by the group size 2"));
  err = communicatorErrorOf([&] {
    runRanks(job, {0}, [](int64_t r, Communicator& c) {
      Tensor in = input(r, {2}), out(DType::Float32, {2});
      c.allReduce(9, in, out, ReduceOp::Sum, desc("c_allreduce_sum", r));
      return out;
    });
  });
  CHECK_THAT(err, Catch::Contains("ring 9 has no process group"));
}

TEST_CASE("an emulated link takes a group's sends together: the more of what a rank sends and receives", "[runtime][comm][p2p]") {
  auto transfer = [](P2PKind kind, int64_t bytes) {
    P2PTransfer t;
    t.kind = kind;
    t.desc.wire_bytes = bytes;
    return t;
  };
  // One way round a ring: one piece out, one in.
  CHECK(groupLinkBytes({transfer(P2PKind::Send, 100), transfer(P2PKind::Recv, 100)}) == 100);
  // Both ways: two pieces leave over the one link.
  CHECK(groupLinkBytes({transfer(P2PKind::Send, 100), transfer(P2PKind::Send, 100), transfer(P2PKind::Recv, 100),
                        transfer(P2PKind::Recv, 50)}) == 200);
  CHECK(groupLinkBytes({transfer(P2PKind::Recv, 70), transfer(P2PKind::Recv, 80), transfer(P2PKind::Send, 100)}) == 150);
  CHECK(groupLinkBytes({}) == 0);
}
