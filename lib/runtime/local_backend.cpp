#include "runtime/local_backend.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "ir/json_pointer.h"
#include "runtime/cpu_budget.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;
// Waits wake at least this often to notice an abort by another rank.
constexpr auto kRingPollInterval = std::chrono::milliseconds(20);

struct AbortFlag {
  std::atomic<bool> raised{false};
};

// One member's announcement at a ring position.
struct Post {
  CollectiveHeader header;
  const Tensor* in = nullptr;
  OpDesc desc;
  bool posted = false;
};

// One ring position: filled as members arrive, read by all, released when all have departed.
struct RingSlot {
  std::vector<Post> posts;
  size_t arrived = 0, departed = 0;
  Clock::time_point full_at{};  // when the last member arrived (--link counts from there)
};

struct Ring {
  std::vector<int64_t> ranks;
  std::unordered_map<uint64_t, std::shared_ptr<RingSlot>> slots;
};

// One send/recv pair: the sender posts its data, the receiver its buffer; the receiver copies and
// marks it done (or records the mismatch both then report); the sender waits for done.
struct P2PSlot {
  const P2PTransfer* send = nullptr;
  P2PTransfer* recv = nullptr;
  P2PSide send_side, recv_side;
  bool done = false;
  std::string mismatch;
  Clock::time_point met{};  // when the second side arrived (--link counts from there)
};
using ChannelKey = std::tuple<int64_t, int64_t, int64_t, uint64_t>;  // ring, from, to, k

// The shared state of one job's rings (one per CommFactory::make call index).
struct LocalWorld {
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<int64_t, Ring> rings;
  std::set<int64_t> finished;  // ranks whose program ended
  std::set<int64_t> ranks;     // the run's rank threads: whom startTogether waits for
  std::set<int64_t> started;   // ranks that reached startTogether
  std::string path;            // the job's file and each rank's program, for startTogether's error
  std::map<int64_t, size_t> program_of_rank;
  std::map<ChannelKey, std::shared_ptr<P2PSlot>> p2p;
};

std::string rankList(const std::vector<int64_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s;
}

class LocalComm final : public Communicator {
 public:
  LocalComm(std::shared_ptr<LocalWorld> world, int64_t rank, std::shared_ptr<AbortFlag> abort, const BackendOptions& opts)
      : world_(std::move(world)), rank_(rank), abort_(std::move(abort)), timeout_(opts.timeout), link_(opts.link) {
    // One counter per ring, made before any stream thread issues: the map never changes shape
    // while streams of this rank use it (each ring's collectives come from one thread at a time).
    for (const auto& [id, ring] : world_->rings) seq_[id] = 0;
  }
  // A rank that fails unwinds through here: raise the abort first, so members waiting for it
  // report "aborted" (and the run reports this rank's error), not "ended its program".
  ~LocalComm() override {
    if (std::uncaught_exceptions() > 0) abort_->raised = true;
    finish();
  }

  int64_t rank() const override { return rank_; }

  void allReduce(int64_t ring, const Tensor& in, Tensor& out, ReduceOp op, const OpDesc& d) override {
    CollectiveHeader h{CollectiveKind::AllReduce, in.dtype(), in.numel(), int64_t(op)};
    exchange(ring, h, in, out, d, [&](const std::vector<Post>& posts, int) {
      for (size_t i = 0; i < posts.size(); ++i) reduceInto(out, posts[i].in->raw(), in.numel(), op, i == 0);
      finishReduce(out, op, int64_t(posts.size()));
    });
  }

  void reduceScatter(int64_t ring, const Tensor& in, Tensor& out, const OpDesc& d) override {
    CollectiveHeader h{CollectiveKind::ReduceScatter, in.dtype(), in.numel(), 0};
    exchange(ring, h, in, out, d, [&](const std::vector<Post>& posts, int pos) {
      int64_t chunk = out.numel();
      size_t offset = size_t(pos) * size_t(chunk) * storageSize(in.storage());
      for (size_t i = 0; i < posts.size(); ++i)
        reduceInto(out, static_cast<const std::byte*>(posts[i].in->raw()) + offset, chunk, ReduceOp::Sum, i == 0);
    });
  }

  void allGather(int64_t ring, const Tensor& in, Tensor& out, const OpDesc& d) override {
    CollectiveHeader h{CollectiveKind::AllGather, in.dtype(), in.numel(), 0};
    exchange(ring, h, in, out, d, [&](const std::vector<Post>& posts, int) {
      size_t piece = in.bytes();
      for (size_t i = 0; i < posts.size(); ++i)
        if (piece) std::memcpy(static_cast<std::byte*>(out.raw()) + i * piece, posts[i].in->raw(), piece);
    });
  }

  void broadcast(int64_t ring, const Tensor& in, Tensor& out, int64_t root, const OpDesc& d) override {
    CollectiveHeader h{CollectiveKind::Broadcast, in.dtype(), in.numel(), root};
    exchange(ring, h, in, out, d, [&](const std::vector<Post>& posts, int) {
      int root_pos = -1;
      for (size_t i = 0; i < posts.size(); ++i)
        if (posts[i].desc.rank == root) root_pos = int(i);
      if (root_pos < 0) return;  // checked before the exchange
      if (in.bytes()) std::memcpy(out.raw(), posts[size_t(root_pos)].in->raw(), in.bytes());
    });
  }

  void reduce(int64_t ring, const Tensor& in, Tensor& out, int64_t root, const OpDesc& d) override {
    CollectiveHeader h{CollectiveKind::Reduce, in.dtype(), in.numel(), root};
    exchange(ring, h, in, out, d, [&](const std::vector<Post>& posts, int pos) {
      if (posts[size_t(pos)].desc.rank != root) {
        if (in.bytes() && out.raw() != in.raw()) std::memcpy(out.raw(), in.raw(), in.bytes());
        return;
      }
      for (size_t i = 0; i < posts.size(); ++i) reduceInto(out, posts[i].in->raw(), in.numel(), ReduceOp::Sum, i == 0);
    });
  }

  void sendRecv(int64_t ring_id, std::vector<P2PTransfer>& group) override {
    if (group.empty()) return;
    const OpDesc& first = group.front().desc;
    auto it = world_->rings.find(ring_id);
    if (it == world_->rings.end()) throw InputError(first.file, first.pointer, first.text() + ": ring " + std::to_string(ring_id) + " has no process group");
    const auto& ranks = it->second.ranks;
    for (const P2PTransfer& t : group)
      if (std::find(ranks.begin(), ranks.end(), rank_) == ranks.end() || std::find(ranks.begin(), ranks.end(), t.peer) == ranks.end())
        throw InputError(t.desc.file, t.desc.pointer, t.desc.text() + ": rank " + std::to_string(rank_) + " or its peer rank " +
                                                          std::to_string(t.peer) + " is not a member of ring " + std::to_string(ring_id));
    // Post every transfer of the group first: none waits before all are issued.
    std::unique_lock lk(world_->mu);
    std::vector<std::shared_ptr<P2PSlot>> slots;
    std::vector<ChannelKey> keys;
    for (P2PTransfer& t : group) {
      const bool send = t.kind == P2PKind::Send;
      const int64_t from = send ? rank_ : t.peer, to = send ? t.peer : rank_;
      const uint64_t k = p2p_seq_[{ring_id, from, to}]++;
      keys.emplace_back(ring_id, from, to, k);
      auto& entry = world_->p2p[keys.back()];
      if (!entry) entry = std::make_shared<P2PSlot>();
      (send ? entry->send_side : entry->recv_side) = P2PSide::of(t);
      if (send) entry->send = &t;
      else entry->recv = &t;
      if (entry->send && entry->recv) entry->met = Clock::now();
      slots.push_back(entry);
    }
    world_->cv.notify_all();
    const auto deadline = Clock::now() + timeout_;
    Clock::time_point met{};
    // A rank that gives up takes its posts back: its buffers die with it, and a late partner must
    // then wait (and notice the abort) instead of touching them.
    struct Retract {
      std::vector<std::shared_ptr<P2PSlot>>& slots;
      std::vector<P2PTransfer>& group;
      ~Retract() {
        for (size_t j = 0; j < slots.size(); ++j)
          if (!slots[j]->done) (group[j].kind == P2PKind::Send ? (void)(slots[j]->send = nullptr) : (void)(slots[j]->recv = nullptr));
      }
    } retract{slots, group};
    for (;;) {
      // Receives copy what has arrived; every transfer is done once its slot is.
      bool all_done = true;
      for (size_t j = 0; j < group.size(); ++j) {
        P2PSlot& sl = *slots[j];
        if (group[j].kind == P2PKind::Recv && !sl.done && sl.mismatch.empty() && sl.send && sl.recv) {
          if (!sl.send_side.sameAs(sl.recv_side)) {
            sl.mismatch = p2pMismatchMessage(std::get<0>(keys[j]), std::get<3>(keys[j]), sl.send_side, sl.recv_side);
          } else {
            if (size_t bytes = sl.send->data->bytes()) std::memcpy(sl.recv->out->raw(), sl.send->data->raw(), bytes);
            sl.done = true;
            world_->p2p.erase(keys[j]);  // the sender holds its own pointer to the slot
          }
          world_->cv.notify_all();
        }
        if (!sl.mismatch.empty()) {
          if (group[j].kind == P2PKind::Recv) world_->p2p.erase(keys[j]);
          throw CollectiveMismatch(group[j].desc.file, group[j].desc.pointer, sl.mismatch, std::get<1>(keys[j]));
        }
        all_done = all_done && sl.done;
        if (sl.done) met = std::max(met, sl.met);
      }
      if (all_done) break;
      if (abort_->raised) throw RankAborted("aborted: another rank failed");
      for (size_t j = 0; j < group.size(); ++j) {
        const P2PSlot& sl = *slots[j];
        if (sl.done) continue;
        const P2PTransfer& t = group[j];
        const bool send = t.kind == P2PKind::Send;
        const std::string what = std::string(send ? "receive" : "send") + " #" + std::to_string(std::get<3>(keys[j])) + " on ring " +
                                 std::to_string(ring_id) + (send ? " from rank " : " to rank ") + std::to_string(rank_) + " (" +
                                 t.desc.text() + (send ? " sends " : " receives ") + std::string(dtypeName(t.dtype())) + " x" +
                                 std::to_string(t.count()) + ")";
        if (world_->finished.count(t.peer))
          throw InputError(t.desc.file, t.desc.pointer, t.desc.text() + ": rank " + std::to_string(t.peer) + " ended its program without issuing " + what);
        if (Clock::now() >= deadline)
          throw InputError(t.desc.file, t.desc.pointer, t.desc.text() + t.desc.onStream() + ": timed out after " +
                                                            std::to_string(timeout_.count() / 1000.0).substr(0, 5) + " s waiting for rank " +
                                                            std::to_string(t.peer) + " to issue " + what);
      }
      world_->cv.wait_for(lk, kRingPollInterval);
    }
    lk.unlock();
    if (link_.on()) {
      std::this_thread::sleep_until(met + link_.duration(groupLinkBytes(group)));
    }
  }

  void startTogether() override {
    const auto deadline = Clock::now() + timeout_;
    std::unique_lock lk(world_->mu);
    world_->started.insert(rank_);
    world_->cv.notify_all();
    // A rank that ended without starting (nothing to run) is not waited for.
    auto missing = [&] {
      std::vector<int64_t> m;
      for (int64_t r : world_->ranks)
        if (!world_->started.count(r) && !world_->finished.count(r)) m.push_back(r);
      return m;
    };
    for (std::vector<int64_t> late = missing(); !late.empty(); late = missing()) {
      if (abort_->raised) throw RankAborted("aborted: another rank failed");
      if (Clock::now() >= deadline) {
        auto at = world_->program_of_rank.find(late.front());
        throw InputError(world_->path, at == world_->program_of_rank.end() ? "" : programPointer(at->second),
                         "rank " + std::to_string(rank_) + ": timed out after " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
                             " s waiting for the other ranks to make their inputs (rank " + rankList(late) + ")");
      }
      world_->cv.wait_for(lk, kRingPollInterval);
    }
  }

  void finish() override {
    std::lock_guard lk(world_->mu);
    world_->finished.insert(rank_);
    world_->cv.notify_all();
  }

  // This rank is failing (another of its streams threw): every member waiting gives up now.
  void cancel() override {
    abort_->raised = true;
    std::lock_guard lk(world_->mu);
    world_->cv.notify_all();
  }

 private:
  std::shared_ptr<LocalWorld> world_;
  int64_t rank_;
  std::shared_ptr<AbortFlag> abort_;
  std::chrono::milliseconds timeout_;
  LinkModel link_;
  std::unordered_map<int64_t, uint64_t> seq_;  // next position per ring
  std::map<std::tuple<int64_t, int64_t, int64_t>, uint64_t> p2p_seq_;  // next send per (ring, from, to), under world_->mu

  template <typename Compute>
  void exchange(int64_t ring_id, const CollectiveHeader& h, const Tensor& in, Tensor& out, const OpDesc& d, Compute compute) {
    auto fail = [&](const std::string& why) { throw InputError(d.file, d.pointer, why); };
    auto it = world_->rings.find(ring_id);  // rings are fixed at construction: no lock needed
    if (it == world_->rings.end()) fail(d.text() + ": ring " + std::to_string(ring_id) + " has no process group");
    Ring& ring = it->second;
    int pos = -1;
    for (size_t i = 0; i < ring.ranks.size(); ++i)
      if (ring.ranks[i] == rank_) pos = int(i);
    if (pos < 0) fail(d.text() + ": rank " + std::to_string(rank_) + " is not a member of ring " + std::to_string(ring_id));
    if (!collectiveRootAttr(h.kind).empty() && std::find(ring.ranks.begin(), ring.ranks.end(), h.extra) == ring.ranks.end())
      fail(d.text() + ": root " + std::to_string(h.extra) + " is not a member of ring " + std::to_string(ring_id));
    const size_t n = ring.ranks.size();
    checkCollectiveShapes(h.kind, in, out, int64_t(n), d);

    const uint64_t seq = seq_.at(ring_id)++;
    const auto deadline = Clock::now() + timeout_;
    std::unique_lock lk(world_->mu);
    auto& entry = ring.slots[seq];
    if (!entry) {
      entry = std::make_shared<RingSlot>();
      entry->posts.resize(n);
    }
    std::shared_ptr<RingSlot> slot = entry;
    slot->posts[size_t(pos)] = Post{h, &in, d, true};
    if (++slot->arrived == n) slot->full_at = Clock::now();
    world_->cv.notify_all();

    // A member that gives up takes its post back: its input dies with it, and a late member must
    // then wait (and notice the abort) instead of reading it.
    auto retract = [&] {
      slot->posts[size_t(pos)] = Post{};
      --slot->arrived;
    };
    while (slot->arrived < n) {
      if (abort_->raised) {
        retract();
        throw RankAborted("aborted: another rank failed");
      }
      std::vector<int64_t> missing, gone;
      for (size_t i = 0; i < n; ++i)
        if (!slot->posts[i].posted) {
          missing.push_back(ring.ranks[i]);
          if (world_->finished.count(ring.ranks[i])) gone.push_back(ring.ranks[i]);
        }
      const bool timed_out = Clock::now() >= deadline;
      if (!gone.empty() || timed_out) retract();
      if (!gone.empty())
        fail(d.text() + ": rank " + rankList(gone) + " ended its program without issuing collective #" + std::to_string(seq) +
             " on ring " + std::to_string(ring_id) + " (rank " + std::to_string(rank_) + " issued " + h.text() + ")");
      if (timed_out)
        fail(d.text() + d.onStream() + ": timed out after " + std::to_string(timeout_.count() / 1000.0).substr(0, 5) +
             " s waiting on ring " + std::to_string(ring_id) + " collective #" + std::to_string(seq) + " for rank " + rankList(missing));
      world_->cv.wait_for(lk, kRingPollInterval);
    }
    // Every member compares against position 0, so all of them report the same mismatch.
    for (size_t i = 1; i < n; ++i)
      if (!slot->posts[i].header.sameAs(slot->posts[0].header))
        throw CollectiveMismatch(d.file, d.pointer,
                                 mismatchMessage(ring_id, seq, slot->posts[0].desc, slot->posts[0].header, slot->posts[i].desc,
                                                 slot->posts[i].header),
                                 ring.ranks[0]);
    lk.unlock();

    compute(slot->posts, pos);

    // Members read each other's inputs: nobody leaves (and frees its input) before all are done.
    // No abort check here: every member that got this far finishes compute without blocking.
    lk.lock();
    ++slot->departed;
    world_->cv.notify_all();
    const auto leave_deadline = Clock::now() + timeout_;
    while (slot->departed < n) {
      if (Clock::now() >= leave_deadline)
        fail(d.text() + ": timed out waiting for the members of ring " + std::to_string(ring_id) + " to finish collective #" +
             std::to_string(seq));
      world_->cv.wait_for(lk, kRingPollInterval);
    }
    ring.slots.erase(seq);  // the first to leave erases; the rest hold their shared_ptr
    const auto link_done = slot->full_at + link_.duration(d.wire_bytes);
    lk.unlock();
    if (link_.on()) std::this_thread::sleep_until(link_done);
  }
};

struct SharedRun {
  std::set<int64_t> ranks;  // of the run's rank threads
  std::mutex mu;
  std::vector<std::shared_ptr<LocalWorld>> worlds;  // by make() call index
  std::shared_ptr<AbortFlag> abort = std::make_shared<AbortFlag>();
};

class RankFactory final : public CommFactory {
 public:
  RankFactory(SharedRun& shared, int64_t rank, const BackendOptions& opts) : shared_(shared), rank_(rank), opts_(opts) {}
  std::unique_ptr<Communicator> make(const Job& job) override {
    std::shared_ptr<LocalWorld> world;
    {
      std::lock_guard lk(shared_.mu);
      if (shared_.worlds.size() <= calls_) {
        auto w = std::make_shared<LocalWorld>();
        for (const auto& g : job.groups) w->rings[g.ring_id].ranks = g.ranks;
        w->ranks = shared_.ranks;
        w->path = job.path;
        for (const auto& p : job.programs) w->program_of_rank[p->rank] = p->position;
        shared_.worlds.push_back(std::move(w));
      }
      world = shared_.worlds[calls_++];
    }
    return std::make_unique<LocalComm>(std::move(world), rank_, shared_.abort, opts_);
  }

 private:
  SharedRun& shared_;
  int64_t rank_;
  BackendOptions opts_;
  size_t calls_ = 0;
};

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(const BackendOptions& opts) : opts_(opts) {}
  std::string name() const override { return "local"; }
  void checkLaunch(const Job&) const override {}
  std::vector<int64_t> hostedRanks(const std::vector<int64_t>& ranks) const override { return ranks; }

  std::map<int64_t, std::string> run(const std::vector<int64_t>& ranks, const RankTask& task) override {
    SharedRun shared;
    shared.ranks.insert(ranks.begin(), ranks.end());
    std::vector<std::string> results(ranks.size());
    std::mutex err_mu;
    std::exception_ptr first_error, first_abort;
    auto body = [&](size_t i) {
      RankFactory comms(shared, ranks[i], opts_);
      if (ranks.size() > 1) pinRankThread(int(i));
      try {
        results[i] = task(ranks[i], comms);
      } catch (const RankAborted&) {
        std::lock_guard lk(err_mu);
        if (!first_abort) first_abort = std::current_exception();
      } catch (...) {
        std::lock_guard lk(err_mu);
        if (!first_error) first_error = std::current_exception();
        shared.abort->raised = true;
      }
    };
    if (ranks.size() == 1) {
      body(0);
    } else {
      std::vector<std::thread> threads;
      threads.reserve(ranks.size());
      for (size_t i = 0; i < ranks.size(); ++i) threads.emplace_back(body, i);
      for (auto& t : threads) t.join();
    }
    if (first_error) std::rethrow_exception(first_error);
    if (first_abort) std::rethrow_exception(first_abort);
    std::map<int64_t, std::string> out;
    for (size_t i = 0; i < ranks.size(); ++i) out[ranks[i]] = std::move(results[i]);
    return out;
  }

 private:
  BackendOptions opts_;
};

}  // namespace

std::unique_ptr<Backend> makeLocalBackend(const BackendOptions& opts) { return std::make_unique<LocalBackend>(opts); }

}  // namespace spopt::rt
