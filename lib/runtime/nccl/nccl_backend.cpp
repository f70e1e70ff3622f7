#include "runtime/nccl/nccl_backend.h"

#include <nccl.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "runtime/nccl/device_executor.h"
#include "runtime/report.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(20);

void ncclCheck(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess && r != ncclInProgress) throw DeviceError(what + " failed: " + ncclGetErrorString(r));
}

ncclDataType_t ncclType(Storage s) {
  switch (s) {
    case Storage::F32: return ncclFloat32;
    case Storage::F64: return ncclFloat64;
    case Storage::I64: return ncclInt64;
    case Storage::U8: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Avg: return ncclAvg;
  }
  return ncclSum;
}

std::string rankList(const std::vector<int64_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

// The members' headers at each ring position, compared on the host before NCCL moves data:
// NCCL itself would hang (or corrupt) on a mismatch.
struct HeaderBoard {
  struct Post {
    CollectiveHeader header;
    OpDesc desc;
    bool posted = false;
  };
  struct Position {
    std::vector<Post> posts;
    size_t arrived = 0, departed = 0;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<int64_t, std::unordered_map<uint64_t, std::shared_ptr<Position>>> rings;
  std::set<int64_t> finished;

  void finish(int64_t rank) {
    std::lock_guard lk(mu);
    finished.insert(rank);
    cv.notify_all();
  }

  void agree(int64_t ring_id, const std::vector<int64_t>& ranks, int pos, uint64_t seq, const CollectiveHeader& h, const OpDesc& d,
             std::chrono::milliseconds timeout, const std::atomic<bool>& aborted) {
    auto fail = [&](const std::string& why) { throw InputError(d.file, d.pointer, why); };
    const size_t n = ranks.size();
    const auto deadline = Clock::now() + timeout;
    std::unique_lock lk(mu);
    auto& entry = rings[ring_id][seq];
    if (!entry) {
      entry = std::make_shared<Position>();
      entry->posts.resize(n);
    }
    std::shared_ptr<Position> slot = entry;
    slot->posts[size_t(pos)] = Post{h, d, true};
    ++slot->arrived;
    cv.notify_all();
    while (slot->arrived < n) {
      if (aborted) throw RankAborted("aborted: another rank failed");
      std::vector<int64_t> missing, gone;
      for (size_t i = 0; i < n; ++i)
        if (!slot->posts[i].posted) {
          missing.push_back(ranks[i]);
          if (finished.count(ranks[i])) gone.push_back(ranks[i]);
        }
      if (!gone.empty())
        fail(d.text() + ": rank " + rankList(gone) + " ended its program without issuing collective #" + std::to_string(seq) +
             " on ring " + std::to_string(ring_id) + " (rank " + std::to_string(d.rank) + " issued " + h.text() + ")");
      if (Clock::now() >= deadline)
        fail(d.text() + ": timed out after " + std::to_string(timeout.count() / 1000.0).substr(0, 5) + " s waiting on ring " +
             std::to_string(ring_id) + " collective #" + std::to_string(seq) + " for rank " + rankList(missing));
      cv.wait_for(lk, kPollInterval);
    }
    if (++slot->departed == n) rings[ring_id].erase(seq);
    // Every member compares against position 0, so all of them report the same mismatch.
    for (size_t i = 1; i < n; ++i)
      if (!slot->posts[i].header.sameAs(slot->posts[0].header))
        throw CollectiveMismatch(d.file, d.pointer,
                                 mismatchMessage(ring_id, seq, slot->posts[0].desc, slot->posts[0].header, slot->posts[i].desc,
                                                 slot->posts[i].header),
                                 ranks[0]);
  }
};

// What the ranks of one job share in this process: a unique id per ring, the header board.
struct JobShared {
  std::map<int64_t, ncclUniqueId> ids;
  HeaderBoard board;
};

struct SharedRun {
  std::mutex mu;
  std::vector<std::shared_ptr<JobShared>> jobs;  // by execute() call index
  std::atomic<bool> aborted{false};
};

void checkCounts(CollectiveKind kind, const DevTensor& in, const DevTensor& out, int64_t members, const OpDesc& d) {
  auto fail = [&](const std::string& why) { throw InputError(d.file, d.pointer, d.text() + ": " + why); };
  if (in.storage() != out.storage()) fail("input and output dtypes differ");
  int64_t want = in.numel;
  if (kind == CollectiveKind::ReduceScatter) {
    if (in.shape.empty() || in.shape[0] % members != 0)
      fail("axis 0 of the input (" + std::to_string(in.shape.empty() ? 0 : in.shape[0]) + ") is not divisible by the group size " +
           std::to_string(members));
    want = in.numel / members;
  } else if (kind == CollectiveKind::AllGather) {
    want = in.numel * members;
  }
  if (out.numel != want) fail("output has " + std::to_string(out.numel) + " elements, the collective produces " + std::to_string(want));
}

class NcclRankComm final : public DeviceComm {
 public:
  NcclRankComm(const Job& job, int64_t rank, int device, JobShared& shared, std::chrono::milliseconds timeout,
               const std::atomic<bool>& aborted)
      : rank_(rank), shared_(shared), timeout_(timeout), aborted_(aborted) {
    cudaCheck(cudaSetDevice(device), "cudaSetDevice");
    // Non-blocking communicators: creation and every call are polled against the timeout and the
    // abort flag, so a rank that never joins cannot hang the others.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclCheck(ncclGroupStart(), "ncclGroupStart");
    for (const auto& g : job.groups) {
      int pos = g.positionOf(rank);
      if (pos < 0) continue;
      Ring r{nullptr, g.ranks, pos, 0};
      ncclResult_t res = ncclCommInitRankConfig(&r.comm, int(g.ranks.size()), shared.ids.at(g.ring_id), pos, &config);
      if (r.comm) rings_[g.ring_id] = std::move(r);
      ncclCheck(res, "ncclCommInitRank (ring " + std::to_string(g.ring_id) + ")");
    }
    ncclCheck(ncclGroupEnd(), "ncclGroupEnd");
    for (auto& [id, r] : rings_) settle(r, "ncclCommInitRank (ring " + std::to_string(id) + ")");
  }

  ~NcclRankComm() override {
    const bool failing = std::uncaught_exceptions() > 0 || aborted_;
    for (auto& [id, r] : rings_)
      if (r.comm) (failing ? ncclCommAbort(r.comm) : ncclCommDestroy(r.comm));
  }

  void allReduce(int64_t ring, const DevTensor& in, DevTensor& out, ReduceOp op, const OpDesc& d, cudaStream_t s) override {
    if (op == ReduceOp::Avg && (in.storage() == Storage::I64 || in.storage() == Storage::U8))
      throw InputError(d.file, d.pointer, d.text() + ": the nccl backend averages floating tensors only");
    Ring& r = agree(ring, {CollectiveKind::AllReduce, in.dtype, in.numel, int64_t(op)}, in, out, d);
    ncclCheck(ncclAllReduce(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), ncclOp(op), r.comm, s), "ncclAllReduce");
    settle(r, "ncclAllReduce");
  }
  void reduceScatter(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) override {
    Ring& r = agree(ring, {CollectiveKind::ReduceScatter, in.dtype, in.numel, 0}, in, out, d);
    ncclCheck(ncclReduceScatter(in.buf.get(), out.buf.get(), size_t(out.numel), ncclType(in.storage()), ncclSum, r.comm, s),
              "ncclReduceScatter");
    settle(r, "ncclReduceScatter");
  }
  void allGather(int64_t ring, const DevTensor& in, DevTensor& out, const OpDesc& d, cudaStream_t s) override {
    Ring& r = agree(ring, {CollectiveKind::AllGather, in.dtype, in.numel, 0}, in, out, d);
    ncclCheck(ncclAllGather(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), r.comm, s), "ncclAllGather");
    settle(r, "ncclAllGather");
  }
  void broadcast(int64_t ring, const DevTensor& in, DevTensor& out, int64_t root, const OpDesc& d, cudaStream_t s) override {
    Ring& r = agree(ring, {CollectiveKind::Broadcast, in.dtype, in.numel, root}, in, out, d);
    int root_pos = -1;
    for (size_t i = 0; i < r.ranks.size(); ++i)
      if (r.ranks[i] == root) root_pos = int(i);
    if (root_pos < 0) throw InputError(d.file, d.pointer, d.text() + ": root " + std::to_string(root) + " is not a member of ring " + std::to_string(ring));
    ncclCheck(ncclBroadcast(in.buf.get(), out.buf.get(), size_t(in.numel), ncclType(in.storage()), root_pos, r.comm, s), "ncclBroadcast");
    settle(r, "ncclBroadcast");
  }
  void abort() override {
    for (auto& [id, r] : rings_)
      if (r.comm) {
        ncclCommAbort(r.comm);
        r.comm = nullptr;
      }
  }

 private:
  struct Ring {
    ncclComm_t comm = nullptr;
    std::vector<int64_t> ranks;
    int position = -1;
    uint64_t seq = 0;
  };
  int64_t rank_;
  JobShared& shared_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>& aborted_;
  std::unordered_map<int64_t, Ring> rings_;

  Ring& agree(int64_t ring_id, const CollectiveHeader& h, const DevTensor& in, const DevTensor& out, const OpDesc& d) {
    auto it = rings_.find(ring_id);
    if (it == rings_.end())
      throw InputError(d.file, d.pointer, d.text() + ": rank " + std::to_string(rank_) + " is not a member of ring " +
                                              std::to_string(ring_id) + " (or the ring has no process group)");
    Ring& r = it->second;
    if (h.kind == CollectiveKind::Broadcast && std::find(r.ranks.begin(), r.ranks.end(), h.extra) == r.ranks.end())
      throw InputError(d.file, d.pointer, d.text() + ": root " + std::to_string(h.extra) + " is not a member of ring " + std::to_string(ring_id));
    checkCounts(h.kind, in, out, int64_t(r.ranks.size()), d);
    shared_.board.agree(ring_id, r.ranks, r.position, r.seq++, h, d, timeout_, aborted_);
    return r;
  }

  // Polls a non-blocking communicator until its last call is enqueued (or failed).
  void settle(Ring& r, const std::string& what) {
    const auto deadline = Clock::now() + timeout_;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclCheck(ncclCommGetAsyncError(r.comm, &state), "ncclCommGetAsyncError");
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) throw DeviceError(what + " failed: " + ncclGetErrorString(state));
      if (aborted_) throw RankAborted("aborted: another rank failed");
      if (Clock::now() >= deadline) throw DeviceError(what + " did not complete within the timeout");
      std::this_thread::yield();
    }
  }
};

class RankFactory final : public CommFactory {
 public:
  RankFactory(SharedRun& shared, int64_t rank, int device, std::chrono::milliseconds timeout)
      : shared_(shared), rank_(rank), device_(device), timeout_(timeout) {}

  // The nccl backend runs whole programs on the device (execute); a host communicator has no
  // meaning for it.
  std::unique_ptr<Communicator> make(const Job&) override {
    throw std::logic_error("the nccl backend runs programs through CommFactory::execute");
  }

  RankRun execute(const Job& job, int64_t rank, const ExecOptions& o) override {
    std::shared_ptr<JobShared> js;
    {
      std::lock_guard lk(shared_.mu);
      if (shared_.jobs.size() <= calls_) {
        auto j = std::make_shared<JobShared>();
        for (const auto& g : job.groups) ncclCheck(ncclGetUniqueId(&j->ids[g.ring_id]), "ncclGetUniqueId");
        shared_.jobs.push_back(std::move(j));
      }
      js = shared_.jobs[calls_++];
    }
    struct Finish {  // members waiting on this rank learn that it will not issue more collectives
      JobShared& js;
      int64_t rank;
      ~Finish() { js.board.finish(rank); }
    } finish{*js, rank};
    NcclRankComm comm(job, rank, device_, *js, timeout_, shared_.aborted);
    return executeOnDevice(*job.program(rank), comm, o, DeviceRunOptions{device_, timeout_, &shared_.aborted});
  }

 private:
  SharedRun& shared_;
  int64_t rank_;
  int device_;
  std::chrono::milliseconds timeout_;
  size_t calls_ = 0;
};

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(const BackendOptions& opts) : opts_(opts), devices_(usableDeviceCount()) {}
  std::string name() const override { return "nccl"; }

  void checkLaunch(const Job& job) const override {
    const size_t ranks = replayRanks(job).size();
    if (ranks > size_t(devices_))
      throw InputError(job.path, "/world_size",
                       "the job runs " + std::to_string(ranks) + " ranks but this machine has " + std::to_string(devices_) +
                           " CUDA device" + (devices_ == 1 ? "" : "s") +
                           ": the nccl backend puts one rank on each GPU (NCCL refuses two ranks of one communicator on one GPU: "
                           "\"Duplicate GPU detected\"); use --backend local or a machine with more GPUs");
  }
  std::vector<int64_t> hostedRanks(const std::vector<int64_t>& ranks) const override { return ranks; }

  // A thread per rank; the rank at position i of `ranks` drives device i.
  std::map<int64_t, std::string> run(const std::vector<int64_t>& ranks, const RankTask& task) override {
    if (ranks.size() > size_t(devices_)) throw InputError("--backend", "", "more ranks than CUDA devices");
    SharedRun shared;
    std::vector<std::string> results(ranks.size());
    std::mutex err_mu;
    std::exception_ptr first_error, first_abort;
    auto body = [&](size_t i) {
      RankFactory comms(shared, ranks[i], int(i), opts_.timeout);
      try {
        cudaCheck(cudaSetDevice(int(i)), "cudaSetDevice");
        results[i] = task(ranks[i], comms);
      } catch (const RankAborted&) {
        std::lock_guard lk(err_mu);
        if (!first_abort) first_abort = std::current_exception();
      } catch (...) {
        std::lock_guard lk(err_mu);
        if (!first_error) first_error = std::current_exception();
        shared.aborted = true;
      }
    };
    std::vector<std::thread> threads;
    threads.reserve(ranks.size());
    for (size_t i = 0; i < ranks.size(); ++i) threads.emplace_back(body, i);
    for (auto& t : threads) t.join();
    if (first_error) std::rethrow_exception(first_error);
    if (first_abort) std::rethrow_exception(first_abort);
    std::map<int64_t, std::string> out;
    for (size_t i = 0; i < ranks.size(); ++i) out[ranks[i]] = std::move(results[i]);
    return out;
  }

 private:
  BackendOptions opts_;
  int devices_;
};

}  // namespace

int usableDeviceCount() {
  int n = 0;  // cudaGetDeviceCount leaves it unwritten when it fails
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    throw InputError("--backend nccl", "", std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorString(e));
  if (n <= 0) throw InputError("--backend nccl", "", "no CUDA device: cudaGetDeviceCount found none");
  return n;
}

std::unique_ptr<Backend> makeNcclBackend(const BackendOptions& opts) { return std::make_unique<NcclBackend>(opts); }

}  // namespace spopt::rt
