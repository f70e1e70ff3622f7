#include "runtime/nccl/nccl_mpi.h"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "runtime/mpi/mpi_backend.h"
#include "runtime/nccl/nccl_comm.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

struct WireHeader {
  int32_t kind, dtype;
  int64_t count, extra, block, index;
  char type[48];
};

class MpiAgreement final : public HeaderAgreement {
 public:
  // Collective over MPI_COMM_WORLD: every process splits every ring, in file order.
  MpiAgreement(const Job& job, int64_t rank, std::chrono::milliseconds timeout) : timeout_(timeout) {
    for (const auto& g : job.groups) {
      int pos = g.positionOf(rank);
      MPI_Comm c = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, pos >= 0 ? 0 : MPI_UNDEFINED, pos, &c);
      if (pos >= 0) comms_[g.ring_id] = c;
    }
  }
  ~MpiAgreement() override {
    for (auto& [id, c] : comms_) MPI_Comm_free(&c);
  }

  void agree(int64_t ring_id, const std::vector<int64_t>& ranks, int, uint64_t seq, const CollectiveHeader& h, const OpDesc& d) override {
    WireHeader mine{};
    mine.kind = int32_t(h.kind);
    mine.dtype = int32_t(h.dtype);
    mine.count = h.count;
    mine.extra = h.extra;
    mine.block = d.block;
    mine.index = d.index;
    std::snprintf(mine.type, sizeof mine.type, "%s", d.type.c_str());
    std::vector<WireHeader> all(ranks.size());
    MPI_Request req;
    MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comms_.at(ring_id), &req);
    const auto deadline = Clock::now() + timeout_;
    for (int done = 0;;) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
      if (Clock::now() >= deadline)
        throw InputError(d.file, d.pointer, d.text() + ": timed out after " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                                                " s on ring " + std::to_string(ring_id) + " collective #" + std::to_string(seq) +
                                                ": a member has not issued it");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    auto header = [&](size_t i) { return CollectiveHeader{CollectiveKind(all[i].kind), DType(all[i].dtype), all[i].count, all[i].extra}; };
    auto desc = [&](size_t i) {
      return OpDesc{std::string(all[i].type, strnlen(all[i].type, sizeof all[i].type)), ranks[i], all[i].block, all[i].index, d.file, ""};
    };
    for (size_t i = 1; i < ranks.size(); ++i)
      if (!header(i).sameAs(header(0)))
        throw CollectiveMismatch(d.file, d.pointer, mismatchMessage(ring_id, seq, desc(0), header(0), desc(i), header(i)), ranks[0]);
  }

 private:
  std::chrono::milliseconds timeout_;
  std::map<int64_t, MPI_Comm> comms_;
};

class MpiNcclFactory final : public CommFactory {
 public:
  MpiNcclFactory(int device, std::chrono::milliseconds timeout) : device_(device), timeout_(timeout) {}
  std::unique_ptr<Communicator> make(const Job&) override {
    throw std::logic_error("the nccl backend runs programs through CommFactory::execute");
  }
  RankRun execute(const Job& job, int64_t rank, const ExecOptions& o) override {
    // Every process takes part in every ring's broadcast, in file order; the ring's first member
    // (world rank = job rank under the mpi launch) creates the id.
    std::map<int64_t, ncclUniqueId> ids;
    for (const auto& g : job.groups) {
      if (g.ranks.empty()) continue;
      ncclUniqueId id;
      std::memset(&id, 0, sizeof id);
      if (rank == g.ranks[0]) ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId");
      MPI_Bcast(&id, int(sizeof id), MPI_BYTE, int(g.ranks[0]), MPI_COMM_WORLD);
      if (g.positionOf(rank) >= 0) ids[g.ring_id] = id;
    }
    MpiAgreement agreement(job, rank, timeout_);
    NcclRankComm comm(job, rank, device_, ids, agreement, timeout_, never_);
    return executeOnDevice(*job.program(rank), comm, o, DeviceRunOptions{device_, timeout_, &never_});
  }

 private:
  int device_;
  std::chrono::milliseconds timeout_;
  std::atomic<bool> never_{false};  // a failing process ends the job with MPI_Abort instead
};

class NcclMpiBackend final : public Backend {
 public:
  NcclMpiBackend(const BackendOptions& opts, int devices) : opts_(opts), devices_(devices), mpi_(makeMpiBackend(opts)) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_);
    MPI_Comm_free(&node);
  }
  std::string name() const override { return "nccl"; }
  void checkLaunch(const Job& job) const override {
    mpi_->checkLaunch(job);
    // Only the processes past a host's GPU count see the problem: every process learns the worst
    // host, so all of them stop with the same error instead of rank 0 waiting in NCCL's init.
    struct {
      int processes, devices;
    } mine{local_ >= devices_ ? local_ + 1 : 0, devices_}, worst{};
    MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    if (worst.processes > 0)
      throw InputError(job.path, "/world_size",
                       "a host runs at least " + std::to_string(worst.processes) + " sp-opt processes but has " +
                           std::to_string(worst.devices) + " CUDA device" + (worst.devices == 1 ? "" : "s") +
                           ": the nccl backend needs one GPU per process (NCCL refuses two ranks of one communicator on one GPU: "
                           "\"Duplicate GPU detected\")");
  }
  std::vector<int64_t> hostedRanks(const std::vector<int64_t>& ranks) const override { return mpi_->hostedRanks(ranks); }
  std::map<int64_t, std::string> run(const std::vector<int64_t>& ranks, const RankTask& task) override {
    return mpi_->run(ranks, [&](int64_t rank, CommFactory&) {
      MpiNcclFactory comms(local_, opts_.timeout);
      return task(rank, comms);
    });
  }
  bool reports() const override { return mpi_->reports(); }
  int agreeOnExit(int code) override { return mpi_->agreeOnExit(code); }
  int reportError(const std::string& line, int code) override { return mpi_->reportError(line, code); }

 private:
  BackendOptions opts_;
  int devices_;
  int local_ = 0;
  std::unique_ptr<Backend> mpi_;
};

}  // namespace

std::unique_ptr<Backend> makeNcclMpiBackend(const BackendOptions& opts, int devices) {
  return std::make_unique<NcclMpiBackend>(opts, devices);
}

}  // namespace spopt::rt
