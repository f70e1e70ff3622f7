#pragma once
// Collectives between the ranks of a replay, keyed by ring id (../shared/design/ops.md).
//
// Collectives pair across the member ranks of a ring by order of issue on that ring, as NCCL
// requires. Every backend checks, at each position, that all members issued the same kind, dtype
// and element count (and root / reduce op): a mismatch is an error naming both ranks and ops, never
// a hang. Every wait has a timeout, and a rank that fails stops the others (they observe an abort
// flag and give up with a short "aborted" error; the failing rank's error is the one reported).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <algorithm>
#include <vector>

#include "analysis/collectives.h"
#include "analysis/machine_model.h"
#include "analysis/p2p.h"
#include "ir/ir.h"
#include "runtime/tensor.h"
#include "support/error.h"

namespace spopt::rt {

// The op a collective call stands for, for error messages.
struct OpDesc {
  std::string type;     // op type, e.g. "c_allreduce_sum"
  int64_t rank = 0;     // global rank issuing it
  int64_t block = 0;    // block idx
  int64_t index = 0;    // position of the op in its block
  std::string file;     // job file as the user named it
  std::string pointer;  // JSON pointer of the op
  std::string stream = "default";  // the execution stream issuing it
  int64_t wire_bytes = 0;          // ring traffic of this rank (comm_stats.h), for --link
  std::string text() const;  // "c_allreduce_sum (rank 0, block 0, op 3)"
  // " on stream 'NAME'" for a named stream, "" for the default one (timeout messages).
  std::string onStream() const { return stream == "default" ? "" : " on stream '" + stream + "'"; }
};

// What each member announces at a ring position before any data moves.
struct CollectiveHeader {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType dtype = DType::Float32;
  int64_t count = 0;     // input elements
  int64_t extra = 0;     // ReduceOp for all-reduce, root for broadcast and reduce, else 0
  bool sameAs(const CollectiveHeader& o) const {
    return kind == o.kind && dtype == o.dtype && count == o.count && extra == o.extra;
  }
  std::string text() const;  // "c_allreduce_sum-kind float32 x20"
};

// "rank 0 issued ... but rank 1 issued ..." as the one-line error both ranks report.
std::string mismatchMessage(int64_t ring, uint64_t seq, const OpDesc& a, const CollectiveHeader& ha,
                            const OpDesc& b, const CollectiveHeader& hb);

// Every member of the ring detects the same mismatch; `reporter` (the ring's first rank) is the
// one whose report a multi-process backend prints.
class CollectiveMismatch : public InputError {
 public:
  CollectiveMismatch(std::string file, std::string pointer, std::string message, int64_t reporter)
      : InputError(std::move(file), std::move(pointer), std::move(message)), reporter_(reporter) {}
  int64_t reporter() const { return reporter_; }

 private:
  int64_t reporter_;
};

// Another rank failed; its error is the one worth reporting.
class RankAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One send or receive of a point-to-point group (analysis/p2p.h sameP2PGroup). `peer` is the
// partner's global rank; a send reads `data`, a receive writes `out` (its declared dtype and shape).
struct P2PTransfer {
  P2PKind kind = P2PKind::Send;
  int64_t peer = 0;
  const Tensor* data = nullptr;
  Tensor* out = nullptr;
  OpDesc desc;
  DType dtype() const { return kind == P2PKind::Send ? data->dtype() : out->dtype(); }
  int64_t count() const { return kind == P2PKind::Send ? data->numel() : out->numel(); }
};

// The wire bytes an emulated link (LinkModel) takes for one group of transfers: a rank's sends
// share its link, and so do its receives (analysis/simulate.h times a group alike), so the more
// of what it sends and what it receives.
inline int64_t groupLinkBytes(const std::vector<P2PTransfer>& group) {
  int64_t sent = 0, received = 0;
  for (const P2PTransfer& t : group) (t.kind == P2PKind::Send ? sent : received) += t.desc.wire_bytes;
  return std::max(sent, received);
}

// What one side of a send/recv pair announces (to its partner, before data moves).
struct P2PSide {
  DType dtype = DType::Float32;
  int64_t count = 0;
  OpDesc desc;
  static P2PSide of(const P2PTransfer& t) { return {t.dtype(), t.count(), t.desc}; }
  bool sameAs(const P2PSide& o) const { return dtype == o.dtype && count == o.count; }
};

// "send/recv mismatch on ring 0, send #0 from rank 0 to rank 1: rank 0 sends float32 x6 from
// send_v2 (rank 0, block 0, op 0) but rank 1 receives float16 x6 from recv_v2 (rank 1, ...)".
std::string p2pMismatchMessage(int64_t ring, uint64_t k, const P2PSide& send, const P2PSide& recv);

// One rank's end of every ring of a job.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;
  // out has the op's declared shape; element counts are checked against the collective's rule.
  virtual void allReduce(int64_t ring, const Tensor& in, Tensor& out, ReduceOp op, const OpDesc& d) = 0;
  // Sum over the group, then chunk `position of this rank in the group` along axis 0.
  virtual void reduceScatter(int64_t ring, const Tensor& in, Tensor& out, const OpDesc& d) = 0;
  // Concatenation of every member's input along axis 0, in group order.
  virtual void allGather(int64_t ring, const Tensor& in, Tensor& out, const OpDesc& d) = 0;
  // The input of the rank whose global id is `root`.
  virtual void broadcast(int64_t ring, const Tensor& in, Tensor& out, int64_t root, const OpDesc& d) = 0;
  // The sum over the group (in group order) on the rank whose global id is `root`; the others'
  // out is their own input.
  virtual void reduce(int64_t ring, const Tensor& in, Tensor& out, int64_t root, const OpDesc& d) = 0;
  // A group of sends and receives on one ring, issued at once (NCCL's ncclGroupStart/End), back
  // when every transfer of it completed: a send when its receive took the data (a rendezvous, so
  // ungrouped sends that wait on each other hang, as the hang check says). The k-th send from a
  // to b on a ring pairs with b's k-th receive from a; a dtype or element-count mismatch is a
  // CollectiveMismatch on both ranks, a partner that never comes a timeout naming it.
  virtual void sendRecv(int64_t ring, std::vector<P2PTransfer>& group) = 0;
  // Called once per step, after this rank's inputs are made and before its clock starts: waits
  // until every rank of the job got here, so that the ranks' steps start together, as a training
  // loop's ranks leave the previous step's last collective together (without it a rank that made
  // its inputs sooner counts its wait for the others at the first collective as step time). A
  // backend whose ranks cannot fail here without the others hanging keeps the default: no wait.
  virtual void startTogether() {}
  // This rank ran its whole program: members still waiting for it at a ring position fail at once.
  virtual void finish() {}
  // Another stream of this rank failed: collectives waiting on other ranks give up (RankAborted)
  // instead of waiting out the timeout. Called from any thread.
  virtual void cancel() {}
};

struct ExecOptions;  // runtime/executor.h
struct RankRun;

// Creates one rank's communicator for a job's process groups. Every rank calls make() (or
// execute()) for the same jobs in the same order (replay of BEFORE, then AFTER, in `check`).
class CommFactory {
 public:
  virtual ~CommFactory() = default;
  virtual std::unique_ptr<Communicator> make(const Job& job) = 0;
  // Runs `rank`'s program of `job`: by default the host executor on make(job)'s communicator
  // (executor.cpp); a device backend (nccl) overrides it with its own executor.
  virtual RankRun execute(const Job& job, int64_t rank, const ExecOptions& o);
};

// Runs a task for every rank (threads in one process, or one process per rank) and returns
// what each rank's task returned, on the process that reports (every rank's, keyed by rank).
using RankTask = std::function<std::string(int64_t rank, CommFactory& comms)>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Throws InputError when this launch cannot run `job` (e.g. mpirun with the wrong -n).
  virtual void checkLaunch(const Job& job) const = 0;
  // Ranks this process runs, out of `ranks` (all of them for local, one for mpi).
  virtual std::vector<int64_t> hostedRanks(const std::vector<int64_t>& ranks) const = 0;
  // Ranks running on this machine at once, of which this process runs `hosted` (the thread
  // budget, cpu_budget.h): the local backend runs them all, mpi counts the host's processes.
  virtual int ranksOnHost(int hosted) const { return hosted; }
  // Runs `task` for each of `ranks`; rethrows the error of the first rank that failed.
  // Returns every rank's result on the reporting process, nothing elsewhere.
  virtual std::map<int64_t, std::string> run(const std::vector<int64_t>& ranks, const RankTask& task) = 0;
  // Whether this process prints reports and errors (rank 0 under mpi).
  virtual bool reports() const { return true; }
  // Prints an error that stops the command before its run and returns the exit code; under mpi
  // it is printed once (by rank 0) and every process returns only after it was.
  virtual int reportError(const std::string& line, int code);
  // Under mpi: every process agrees on a failure found by some (0 ok, else the worst exit code).
  virtual int agreeOnExit(int code) { return code; }
};

// --link BW_GBPS[,LATENCY_US] (analysis/machine_model.h's LinkSpec, which the cost model times
// alike): a collective takes at least latency + wire bytes / bandwidth of wall time from the moment
// its last member arrived (the backend sleeps the rest), so that a CPU replay shows what
// overlapping communication with compute saves. Off when gbps is 0.
struct LinkModel : LinkSpec {
  // 0 when off (x / 0 would be inf, and converting it to an integer undefined: the fuzzer found
  // the local backend computing it for every collective); clamped below a century.
  std::chrono::nanoseconds duration(int64_t wire_bytes) const {
    if (!on()) return {};
    double ns = latency_us * 1e3 + double(wire_bytes) / gbps;
    return std::chrono::nanoseconds(ns < 3e18 ? int64_t(ns) : int64_t(3e18));
  }
};

struct BackendOptions {
  std::chrono::milliseconds timeout{60'000};
  LinkModel link{};
};

// Reduction helpers shared by the backends: elementwise, in group order (deterministic bits).
// Storage-generic: dst = src for the first member, then dst op= src for the rest in order.
void reduceInto(Tensor& dst, const void* src, int64_t count, ReduceOp op, bool first);
void finishReduce(Tensor& dst, ReduceOp op, int64_t members);  // AVG divides by the member count

// Checks the out count of a collective against its rule; throws InputError naming the op.
void checkCollectiveShapes(CollectiveKind kind, const Tensor& in, const Tensor& out, int64_t members, const OpDesc& d);

}  // namespace spopt::rt
