#include "runtime/mpi/mpi_backend.h"

#include <mpi.h>

#include <atomic>
#include <algorithm>
#include <climits>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "runtime/report.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

// Streams of a rank issue MPI calls from several threads: one at a time (MPI_THREAD_SERIALIZED).
std::mutex& mpiMutex() {
  static std::mutex mu;
  return mu;
}

// Calls `test` (under the MPI mutex) until it says done (true) or `deadline` passes (false);
// yields, then sleeps briefly, between tries so oversubscribed ranks make progress. A raised
// `cancelled` (another stream of this rank failed) throws RankAborted.
template <typename Test>
bool pollUntil(Clock::time_point deadline, const std::atomic<bool>* cancelled, Test test) {
  for (unsigned spin = 0;; ++spin) {
    bool done;
    {
      std::lock_guard lk(mpiMutex());
      done = test();
    }
    if (done) return true;
    if (cancelled && *cancelled) throw RankAborted("aborted: another stream of this rank failed");
    if (Clock::now() >= deadline) return false;
    if (spin < 64) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Polls `req` until it completes (true) or `deadline` passes (false; the request stays pending).
bool completesBy(MPI_Request& req, Clock::time_point deadline, const std::atomic<bool>* cancelled = nullptr) {
  return pollUntil(deadline, cancelled, [&] {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

// What each member announces before the data moves (fixed size: sent as bytes).
struct WireHeader {
  int32_t kind, dtype;
  int64_t count, extra, block, index;
  char type[48];
};

WireHeader toWire(const CollectiveHeader& h, const OpDesc& d) {
  WireHeader w{};
  w.kind = int32_t(h.kind);
  w.dtype = int32_t(h.dtype);
  w.count = h.count;
  w.extra = h.extra;
  w.block = d.block;
  w.index = d.index;
  std::snprintf(w.type, sizeof w.type, "%s", d.type.c_str());
  return w;
}

CollectiveHeader fromWire(const WireHeader& w) {
  return CollectiveHeader{CollectiveKind(w.kind), DType(w.dtype), w.count, w.extra};
}

struct MpiRing {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<int64_t> ranks;
  int position = -1;
  uint64_t seq = 0;
  Clock::time_point met{};  // when the members' headers of the current collective met (--link)
};

int checkedCount(size_t bytes, const OpDesc& d) {
  if (bytes > size_t(INT_MAX)) throw InputError(d.file, d.pointer, d.text() + ": a collective over 2 GiB is not supported by the mpi backend");
  return int(bytes);
}

class MpiComm final : public Communicator {
 public:
  MpiComm(const Job& job, int64_t rank, const BackendOptions& opts) : rank_(rank), timeout_(opts.timeout), link_(opts.link) {
    // Collective over MPI_COMM_WORLD: every process creates every ring, in file order.
    for (const auto& g : job.groups) {
      int pos = g.positionOf(rank);
      MPI_Comm c = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, pos >= 0 ? 0 : MPI_UNDEFINED, pos, &c);
      if (pos >= 0) rings_[g.ring_id] = MpiRing{c, g.ranks, pos, 0};
    }
  }
  ~MpiComm() override {
    for (auto& [id, r] : rings_)
      if (r.comm != MPI_COMM_NULL) MPI_Comm_free(&r.comm);
  }

  int64_t rank() const override { return rank_; }
  void cancel() override { cancelled_ = true; }

  void allReduce(int64_t ring_id, const Tensor& in, Tensor& out, ReduceOp op, const OpDesc& d) override {
    MpiRing& r = announce(ring_id, {CollectiveKind::AllReduce, in.dtype(), in.numel(), int64_t(op)}, in, out, d);
    const size_t n = r.ranks.size(), bytes = in.bytes();
    std::vector<std::byte> all(n * bytes);
    MPI_Request req;
    locked([&] { MPI_Iallgather(in.raw(), checkedCount(bytes, d), MPI_BYTE, all.data(), int(bytes), MPI_BYTE, r.comm, &req); });
    wait(req, r, ring_id, d);
    for (size_t i = 0; i < n; ++i) reduceInto(out, all.data() + i * bytes, in.numel(), op, i == 0);
    finishReduce(out, op, int64_t(n));
    linkDelay(r, d);
  }

  void reduceScatter(int64_t ring_id, const Tensor& in, Tensor& out, const OpDesc& d) override {
    MpiRing& r = announce(ring_id, {CollectiveKind::ReduceScatter, in.dtype(), in.numel(), 0}, in, out, d);
    const size_t n = r.ranks.size(), chunk = out.bytes();
    // Member j receives chunk j of every input: then each adds its n pieces in group order.
    std::vector<std::byte> pieces(n * chunk);
    MPI_Request req;
    locked([&] { MPI_Ialltoall(in.raw(), checkedCount(chunk, d), MPI_BYTE, pieces.data(), int(chunk), MPI_BYTE, r.comm, &req); });
    wait(req, r, ring_id, d);
    for (size_t i = 0; i < n; ++i) reduceInto(out, pieces.data() + i * chunk, out.numel(), ReduceOp::Sum, i == 0);
    linkDelay(r, d);
  }

  void allGather(int64_t ring_id, const Tensor& in, Tensor& out, const OpDesc& d) override {
    MpiRing& r = announce(ring_id, {CollectiveKind::AllGather, in.dtype(), in.numel(), 0}, in, out, d);
    MPI_Request req;
    locked([&] { MPI_Iallgather(in.raw(), checkedCount(in.bytes(), d), MPI_BYTE, out.raw(), int(in.bytes()), MPI_BYTE, r.comm, &req); });
    wait(req, r, ring_id, d);
    linkDelay(r, d);
  }

  // Each side sends its header to its partner and receives the partner's (so both see a mismatch),
  // then the data moves: MPI_Issend, which completes only once the receive has matched it (the
  // rendezvous the hang check assumes). MPI keeps messages of one (source, tag, communicator) in
  // order: the k-th of a channel meets the k-th.
  void sendRecv(int64_t ring_id, std::vector<P2PTransfer>& group) override {
    constexpr int kSendHeaderTag = 7101, kRecvHeaderTag = 7102, kDataTag = 7103;
    if (group.empty()) return;
    auto it = rings_.find(ring_id);
    const OpDesc& first = group.front().desc;
    if (it == rings_.end())
      throw InputError(first.file, first.pointer, first.text() + ": rank " + std::to_string(rank_) + " is not a member of ring " +
                                                      std::to_string(ring_id) + " (or the ring has no process group)");
    MpiRing& r = it->second;
    const size_t n = group.size();
    std::vector<int> peer_pos(n, -1);
    std::vector<uint64_t> k(n);
    for (size_t j = 0; j < n; ++j) {
      const P2PTransfer& t = group[j];
      for (size_t i = 0; i < r.ranks.size(); ++i)
        if (r.ranks[i] == t.peer) peer_pos[j] = int(i);
      if (peer_pos[j] < 0) throw InputError(t.desc.file, t.desc.pointer, t.desc.text() + ": peer rank " + std::to_string(t.peer) + " is not a member of ring " + std::to_string(ring_id));
      checkedCount(t.kind == P2PKind::Send ? t.data->bytes() : t.out->bytes(), t.desc);
      std::lock_guard lk(p2p_mu_);
      k[j] = p2p_seq_[{ring_id, t.peer, t.kind}]++;
    }
    // Headers: left to the ending process on the timeout path, as exchangeHeaders does.
    auto* mine = new WireHeader[2 * n];
    WireHeader* theirs = mine + n;
    std::vector<MPI_Request> reqs(2 * n, MPI_REQUEST_NULL);
    locked([&] {
      for (size_t j = 0; j < n; ++j) {
        const P2PTransfer& t = group[j];
        const bool send = t.kind == P2PKind::Send;
        mine[j] = toWire({CollectiveKind::AllReduce, t.dtype(), t.count(), 0}, t.desc);
        MPI_Isend(&mine[j], sizeof(WireHeader), MPI_BYTE, peer_pos[j], send ? kSendHeaderTag : kRecvHeaderTag, r.comm, &reqs[j]);
        MPI_Irecv(&theirs[j], sizeof(WireHeader), MPI_BYTE, peer_pos[j], send ? kRecvHeaderTag : kSendHeaderTag, r.comm, &reqs[n + j]);
      }
    });
    awaitP2P(reqs, group, k, ring_id, "issue");
    Clock::time_point met = Clock::now();
    std::vector<WireHeader> partner(theirs, theirs + n);
    delete[] mine;
    for (size_t j = 0; j < n; ++j) {
      const P2PTransfer& t = group[j];
      const WireHeader& w = partner[j];
      P2PSide other{DType(w.dtype), w.count, OpDesc{std::string(w.type, strnlen(w.type, sizeof w.type)), t.peer, w.block, w.index, t.desc.file, ""}};
      P2PSide self = P2PSide::of(t);
      if (!self.sameAs(other)) {
        bool send = t.kind == P2PKind::Send;
        throw CollectiveMismatch(t.desc.file, t.desc.pointer, p2pMismatchMessage(ring_id, k[j], send ? self : other, send ? other : self),
                                 send ? rank_ : t.peer);
      }
    }
    std::vector<MPI_Request> data(n, MPI_REQUEST_NULL);
    locked([&] {
      for (size_t j = 0; j < n; ++j) {
        P2PTransfer& t = group[j];
        if (t.kind == P2PKind::Send) MPI_Issend(t.data->raw(), int(t.data->bytes()), MPI_BYTE, peer_pos[j], kDataTag, r.comm, &data[j]);
        else MPI_Irecv(t.out->raw(), int(t.out->bytes()), MPI_BYTE, peer_pos[j], kDataTag, r.comm, &data[j]);
      }
    });
    awaitP2P(data, group, k, ring_id, "complete");
    if (link_.on()) {
      std::this_thread::sleep_until(met + link_.duration(groupLinkBytes(group)));
    }
  }

  void broadcast(int64_t ring_id, const Tensor& in, Tensor& out, int64_t root, const OpDesc& d) override {
    MpiRing& r = announce(ring_id, {CollectiveKind::Broadcast, in.dtype(), in.numel(), root}, in, out, d);
    int root_pos = -1;
    for (size_t i = 0; i < r.ranks.size(); ++i)
      if (r.ranks[i] == root) root_pos = int(i);
    if (root_pos < 0) throw InputError(d.file, d.pointer, d.text() + ": root " + std::to_string(root) + " is not a member of ring " + std::to_string(ring_id));
    if (r.position == root_pos && in.bytes()) std::memcpy(out.raw(), in.raw(), in.bytes());
    MPI_Request req;
    locked([&] { MPI_Ibcast(out.raw(), checkedCount(out.bytes(), d), MPI_BYTE, root_pos, r.comm, &req); });
    wait(req, r, ring_id, d);
    linkDelay(r, d);
  }

  // Gathered on the root and summed there in group order (the bits the local backend computes);
  // the other members keep their input.
  void reduce(int64_t ring_id, const Tensor& in, Tensor& out, int64_t root, const OpDesc& d) override {
    MpiRing& r = announce(ring_id, {CollectiveKind::Reduce, in.dtype(), in.numel(), root}, in, out, d);
    int root_pos = -1;
    for (size_t i = 0; i < r.ranks.size(); ++i)
      if (r.ranks[i] == root) root_pos = int(i);
    if (root_pos < 0) throw InputError(d.file, d.pointer, d.text() + ": root " + std::to_string(root) + " is not a member of ring " + std::to_string(ring_id));
    const size_t n = r.ranks.size(), bytes = in.bytes();
    const bool is_root = r.position == root_pos;
    std::vector<std::byte> all(is_root ? n * bytes : 0);
    MPI_Request req;
    locked([&] { MPI_Igather(in.raw(), checkedCount(bytes, d), MPI_BYTE, all.data(), int(bytes), MPI_BYTE, root_pos, r.comm, &req); });
    wait(req, r, ring_id, d);
    if (is_root)
      for (size_t i = 0; i < n; ++i) reduceInto(out, all.data() + i * bytes, in.numel(), ReduceOp::Sum, i == 0);
    else if (bytes && out.raw() != in.raw())
      std::memcpy(out.raw(), in.raw(), bytes);
    linkDelay(r, d);
  }

 private:
  int64_t rank_;
  std::chrono::milliseconds timeout_;
  LinkModel link_;
  std::unordered_map<int64_t, MpiRing> rings_;  // fixed after construction
  std::atomic<bool> cancelled_{false};
  std::mutex p2p_mu_;
  std::map<std::tuple<int64_t, int64_t, P2PKind>, uint64_t> p2p_seq_;  // next per (ring, peer rank, send or receive)

  // Polls a group's requests (one or two per transfer, request j % group size is transfer j's)
  // until all complete or the timeout, which names the first transfer's partner still missing.
  void awaitP2P(std::vector<MPI_Request>& reqs, const std::vector<P2PTransfer>& group, const std::vector<uint64_t>& k, int64_t ring_id,
                const char* verb) {
    bool done = pollUntil(Clock::now() + timeout_, &cancelled_, [&] {
      int flag = 0;
      MPI_Testall(int(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
      return flag != 0;
    });
    if (done) return;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      const P2PTransfer& t = group[i % group.size()];
      const bool send = t.kind == P2PKind::Send;
      throw InputError(t.desc.file, t.desc.pointer,
                       t.desc.text() + t.desc.onStream() + ": timed out after " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                           " s waiting for rank " + std::to_string(t.peer) + " to " + verb + " " + (send ? "receive" : "send") + " #" +
                           std::to_string(k[i % group.size()]) + " on ring " + std::to_string(ring_id) + (send ? " from rank " : " to rank ") +
                           std::to_string(rank_) + " (stopped, or still before it)");
    }
  }

  template <typename F>
  static void locked(F f) {
    std::lock_guard lk(mpiMutex());
    f();
  }

  // --link: the collective takes at least the modelled wire time from the members' meeting.
  void linkDelay(const MpiRing& r, const OpDesc& d) {
    if (link_.on()) std::this_thread::sleep_until(r.met + link_.duration(d.wire_bytes));
  }

  // Polls a request until done or the timeout; yields so oversubscribed ranks make progress.
  void wait(MPI_Request& req, const MpiRing& r, int64_t ring_id, const OpDesc& d) {
    if (completesBy(req, Clock::now() + timeout_, &cancelled_)) return;
    // This rank has issued it; which of the others has not, MPI cannot say without a progress
    // exchange of its own (the pending allgather shows no partial arrivals): name the candidates.
    std::string others;
    for (size_t i = 0; i < r.ranks.size(); ++i)
      if (r.ranks[i] != rank_) others += (others.empty() ? "" : ",") + std::to_string(r.ranks[i]);
    throw InputError(d.file, d.pointer, d.text() + d.onStream() + ": timed out after " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                                            " s on ring " + std::to_string(ring_id) + " collective #" + std::to_string(r.seq - 1) +
                                            ": rank " + std::to_string(rank_) + " issued it, and one or more of ranks {" + others +
                                            "} has not (stopped, or still before it)");
  }

  // Every member sends its header to every other one, point to point (not one allgather), so
  // that a member whose header has not come by the timeout is known: the error names exactly the
  // ranks that have not issued the collective (stopped, or still before it).
  void exchangeHeaders(const WireHeader& mine, std::vector<WireHeader>& all, const MpiRing& r, int64_t ring_id, const OpDesc& d) {
    constexpr int kHeaderTag = 7001;
    const size_t n = all.size();
    // MPI writes and reads these until the requests complete: on the timeout path they never may,
    // so the buffers live on the heap and are then left to the ending process, not freed under MPI.
    auto* wire = new WireHeader[n + 1];
    wire[n] = mine;
    std::vector<MPI_Request> recvs(n, MPI_REQUEST_NULL), sends(n, MPI_REQUEST_NULL);
    locked([&] {
      for (size_t i = 0; i < n; ++i) {
        if (int(i) == r.position) continue;
        MPI_Irecv(&wire[i], sizeof(WireHeader), MPI_BYTE, int(i), kHeaderTag, r.comm, &recvs[i]);
        MPI_Isend(&wire[n], sizeof(WireHeader), MPI_BYTE, int(i), kHeaderTag, r.comm, &sends[i]);
      }
    });
    std::vector<uint8_t> arrived(n, 0);
    arrived[size_t(r.position)] = 1;
    bool met = pollUntil(Clock::now() + timeout_, &cancelled_, [&] {
      bool all_done = true;
      for (size_t i = 0; i < n; ++i) {
        int done = 1;
        if (!arrived[i]) MPI_Test(&recvs[i], &done, MPI_STATUS_IGNORE), arrived[i] = uint8_t(done);
        if (sends[i] != MPI_REQUEST_NULL) MPI_Test(&sends[i], &done, MPI_STATUS_IGNORE);
        all_done = all_done && arrived[i] && sends[i] == MPI_REQUEST_NULL;
      }
      return all_done;
    });
    if (met) {
      for (size_t i = 0; i < n; ++i) all[i] = int(i) == r.position ? mine : wire[i];
      delete[] wire;
      return;
    }
    std::string missing;
    size_t count = 0;
    for (size_t i = 0; i < n; ++i)
      if (!arrived[i]) missing += (missing.empty() ? "" : ",") + std::to_string(r.ranks[i]), ++count;
    if (count == 0) missing = "none (its header went out but was not received)";  // only sends pending
    throw InputError(d.file, d.pointer, d.text() + d.onStream() + ": timed out after " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                                            " s on ring " + std::to_string(ring_id) + " collective #" + std::to_string(r.seq - 1) +
                                            ": rank " + std::to_string(rank_) + " issued it; " + (count == 1 ? "rank " : "ranks ") +
                                            (count == 1 ? missing : "{" + missing + "}") + (count == 1 ? " has" : " have") +
                                            " not (stopped, or still before it)");
  }

  MpiRing& announce(int64_t ring_id, const CollectiveHeader& h, const Tensor& in, const Tensor& out, const OpDesc& d) {
    auto it = rings_.find(ring_id);
    if (it == rings_.end())
      throw InputError(d.file, d.pointer, d.text() + ": rank " + std::to_string(rank_) + " is not a member of ring " +
                                              std::to_string(ring_id) + " (or the ring has no process group)");
    MpiRing& r = it->second;
    const size_t n = r.ranks.size();
    checkCollectiveShapes(h.kind, in, out, int64_t(n), d);
    const uint64_t seq = r.seq++;
    WireHeader mine = toWire(h, d);
    std::vector<WireHeader> all(n);
    exchangeHeaders(mine, all, r, ring_id, d);
    r.met = Clock::now();
    // Every member compares against position 0, so all of them report the same mismatch.
    auto desc = [&](size_t i) {
      return OpDesc{std::string(all[i].type, strnlen(all[i].type, sizeof all[i].type)), r.ranks[i], all[i].block, all[i].index, d.file, ""};
    };
    for (size_t i = 1; i < n; ++i)
      if (!fromWire(all[i]).sameAs(fromWire(all[0])))
        throw CollectiveMismatch(d.file, d.pointer, mismatchMessage(ring_id, seq, desc(0), fromWire(all[0]), desc(i), fromWire(all[i])),
                                 r.ranks[0]);
    return r;
  }
};

class WorldFactory final : public CommFactory {
 public:
  WorldFactory(int64_t rank, const BackendOptions& opts) : rank_(rank), opts_(opts) {}
  std::unique_ptr<Communicator> make(const Job& job) override { return std::make_unique<MpiComm>(job, rank_, opts_); }

 private:
  int64_t rank_;
  BackendOptions opts_;
};

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(const BackendOptions& opts) : opts_(opts) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      // Stream threads issue MPI calls one at a time (mpiMutex): SERIALIZED is enough.
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      owns_ = true;
    }
    int r = 0, s = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    rank_ = r;
    size_ = s;
    // Its own communicator, so the error barrier never matches a collective of the run itself.
    MPI_Comm_dup(MPI_COMM_WORLD, &error_comm_);
  }
  ~MpiBackend() override {
    MPI_Comm_free(&error_comm_);
    if (owns_) MPI_Finalize();
  }

  std::string name() const override { return "mpi"; }

  void checkLaunch(const Job& job) const override {
    if (size_ == 1 && job.world_size > 1)
      throw InputError(job.path, "/world_size", "the job has " + std::to_string(job.world_size) +
                                                    " ranks but this process is alone in MPI_COMM_WORLD: start it with mpirun -n " +
                                                    std::to_string(job.world_size) + " sp-opt ... --backend mpi");
    if (size_ != job.world_size)
      throw InputError(job.path, "/world_size", "MPI_COMM_WORLD has " + std::to_string(size_) + " processes but the job's world_size is " +
                                                    std::to_string(job.world_size) + ": start it with mpirun -n " + std::to_string(job.world_size));
    for (int64_t r = 0; r < job.world_size; ++r)
      if (!job.program(r))
        throw InputError(job.path, "/programs", "rank " + std::to_string(r) +
                                                    " has no program; the mpi backend runs one program per process (use --backend local for a subset)");
  }

  // The processes sharing this machine (MPI_COMM_TYPE_SHARED), for the thread budget.
  int ranksOnHost(int) const override {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int n = 1;
    MPI_Comm_size(local, &n);
    MPI_Comm_free(&local);
    return n;
  }

  std::vector<int64_t> hostedRanks(const std::vector<int64_t>& ranks) const override {
    for (int64_t r : ranks)
      if (r == rank_) return {r};
    return {};
  }

  std::map<int64_t, std::string> run(const std::vector<int64_t>& ranks, const RankTask& task) override {
    std::string mine;
    bool hosted = !hostedRanks(ranks).empty();
    if (hosted) {
      WorldFactory comms(rank_, opts_);
      try {
        mine = task(rank_, comms);
      } catch (const CollectiveMismatch& e) {
        // Every member found it: the ring's first rank reports, the others give it time to.
        if (e.reporter() != rank_) std::this_thread::sleep_for(std::chrono::seconds(2));
        fail(e.what(), kExitBadInput);
      } catch (const InputError& e) {
        fail(e.what(), kExitBadInput);
      } catch (const std::bad_alloc&) {
        fail("sp-opt: out of memory (rank " + std::to_string(rank_) + ")", kExitBadInput);
      } catch (const std::exception& e) {
        fail(std::string("sp-opt: internal error (rank ") + std::to_string(rank_) + "): " + e.what(), kExitInternal);
      }
    }
    // Gather every result on rank 0.
    int len = int(mine.size());
    std::vector<int> lens(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (rank_ == 0) {
      size_t total = 0;
      for (int i = 0; i < size_; ++i) offsets[size_t(i)] = int(total), total += size_t(lens[size_t(i)]);
      all.resize(total);
    }
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::map<int64_t, std::string> out;
    if (rank_ != 0) return out;
    for (int64_t r : ranks) out[r] = all.substr(size_t(offsets[size_t(r)]), size_t(lens[size_t(r)]));
    return out;
  }

  bool reports() const override { return rank_ == 0; }

  // An error found before the run (a bad file, the wrong -n) is found by every process alike:
  // rank 0 prints it, and no process exits before it has, or mpirun could kill rank 0 first. An
  // error only some processes found leaves the barrier open: each of them then prints its own and
  // aborts the job.
  int reportError(const std::string& line, int code) override {
    if (rank_ == 0) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
    MPI_Request req;
    MPI_Ibarrier(error_comm_, &req);
    if (completesBy(req, Clock::now() + opts_.timeout)) return code;
    fail(line, code);
  }

  int agreeOnExit(int code) override {
    int c = code;
    MPI_Bcast(&c, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return c;
  }

 private:
  BackendOptions opts_;
  bool owns_ = false;
  int64_t rank_ = 0, size_ = 1;
  MPI_Comm error_comm_ = MPI_COMM_NULL;

  // A failed rank stops the whole job with its error (MPI_Abort ends every process).
  [[noreturn]] void fail(const std::string& line, int code) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }
};

}  // namespace

std::unique_ptr<Backend> makeMpiBackend(const BackendOptions& opts) { return std::make_unique<MpiBackend>(opts); }

}  // namespace spopt::rt
