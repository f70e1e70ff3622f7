#include "runtime/nccl/nccl_backend.h"

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "runtime/nccl/device_executor.h"
#include "runtime/nccl/nccl_comm.h"
#ifdef SPOPT_NCCL_WITH_MPI
#include "runtime/nccl/nccl_mpi.h"
#endif
#include "runtime/report.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::string rankList(const std::vector<int64_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

// The members' headers at each ring position, compared in this process's memory.
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

// One rank's view of the board, with its timeout and the run's abort flag.
class BoardAgreement final : public HeaderAgreement {
 public:
  BoardAgreement(HeaderBoard& board, std::chrono::milliseconds timeout, const std::atomic<bool>& aborted)
      : board_(board), timeout_(timeout), aborted_(aborted) {}
  void agree(int64_t ring_id, const std::vector<int64_t>& ranks, int position, uint64_t seq, const CollectiveHeader& h,
             const OpDesc& d) override {
    board_.agree(ring_id, ranks, position, seq, h, d, timeout_, aborted_);
  }

 private:
  HeaderBoard& board_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>& aborted_;
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
    // Members waiting on this rank learn that it will not issue more collectives; when it fails,
    // the abort is raised first, so they report "aborted" and this rank's error is the one shown.
    struct Finish {
      JobShared& js;
      std::atomic<bool>& aborted;
      int64_t rank;
      ~Finish() {
        if (std::uncaught_exceptions() > 0) aborted = true;
        js.board.finish(rank);
      }
    } finish{*js, shared_.aborted, rank};
    BoardAgreement agreement(js->board, timeout_, shared_.aborted);
    NcclRankComm comm(job, rank, device_, js->ids, agreement, timeout_, shared_.aborted);
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

std::unique_ptr<Backend> makeNcclBackend(const BackendOptions& opts) {
#ifdef SPOPT_NCCL_WITH_MPI
  // Started by mpirun: one process per GPU (Open MPI, MPICH/Hydra and PMIx launchers set these).
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK"))
    return makeNcclMpiBackend(opts, usableDeviceCount());
#endif
  return std::make_unique<NcclBackend>(opts);
}

}  // namespace spopt::rt
