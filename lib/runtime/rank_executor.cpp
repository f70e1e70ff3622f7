// executeProgram: one rank's program, a thread per execution stream (stream_plan.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include "analysis/comm_stats.h"
#include "analysis/liveness.h"
#include "analysis/p2p.h"
#include "ops/op_view.h"
#include "runtime/cpu_budget.h"
#include "runtime/executor.h"
#include "runtime/kernels/kernels.h"
#include "runtime/fused_views.h"
#include "runtime/op_io.h"
#include "runtime/op_site.h"
#include "runtime/stream_plan.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

// A KernelAllReduce op's ring, as its kernel sees it: each call is one all-reduce of the
// communicator on the op's ring, issued under the op's description (errors name the op); --link
// times each by its own ring traffic (an all-reduce's 2(n-1)/n x the buffer).
class CommRing : public KernelRing {
 public:
  CommRing(Communicator& comm, int64_t ring, const ProcessGroup& g, int64_t rank, OpDesc d)
      : comm_(comm), ring_(ring), size_(int64_t(g.ranks.size())), position_(g.positionOf(rank)), d_(std::move(d)) {}
  int64_t size() const override { return size_; }
  int64_t position() const override { return position_; }
  void allReduce(Tensor& buf, ReduceOp op) override {
    Tensor out(buf.dtype(), buf.shape());
    d_.wire_bytes = 2 * (size_ - 1) * int64_t(buf.bytes()) / std::max<int64_t>(size_, 1);
    comm_.allReduce(ring_, buf, out, op, d_);
    buf = std::move(out);
  }

 private:
  Communicator& comm_;
  int64_t ring_, size_, position_;
  OpDesc d_;
};
// Waits for another stream wake at least this often to notice a failure.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

// The var values of one rank, indexed by Var::id. Streams touch distinct vars at any one time
// (the plan orders every reader and writer of a var), so at() needs no lock; the byte counts and
// the first fill of a program input do.
class Values {
 public:
  explicit Values(size_t n) : t_(n) {}
  Tensor& at(const Var& v) { return t_[v.id]; }
  void set(const Var& v, Tensor t) {
    std::lock_guard lk(mu_);
    current_ -= t_[v.id].empty() ? 0 : t_[v.id].bytes();
    current_ += t.bytes();
    t_[v.id] = std::move(t);
    if (current_ > peak_) peak_ = current_;
  }
  // A program input's value, made before the step, at its first read. Two streams may read it
  // first at once: one moves it in.
  void adopt(const Var& v, Tensor& prepared) {
    std::lock_guard lk(mu_);
    if (!t_[v.id].empty() || prepared.empty()) return;
    current_ += prepared.bytes();
    t_[v.id] = std::move(prepared);
    if (current_ > peak_) peak_ = current_;
  }
  void release(const Var& v) {
    std::lock_guard lk(mu_);
    if (t_[v.id].empty()) return;
    current_ -= t_[v.id].bytes();
    t_[v.id] = Tensor();
  }
  size_t peak() const { return peak_; }

 private:
  std::mutex mu_;
  std::vector<Tensor> t_;
  size_t current_ = 0, peak_ = 0;
};

// Another stream of the rank failed: this one stops quietly (the failure is what gets reported).
struct Cancelled {};

class RankExecutor {
 public:
  RankExecutor(const Program& p, Communicator& comm, const ExecOptions& o)
      : p_(p), b_(entryBlock(p)), comm_(comm), o_(o), fused_(b_), plan_(planStreams(p, b_, !o.single_stream, fused_)), values_(p.next_var_id),
        remaining_(p.next_var_id), streams_(plan_.names.size()), events_(plan_.names.size()) {
    for (size_t id = 0; id < remaining_.size(); ++id) remaining_[id].store(plan_.uses[id], std::memory_order_relaxed);
  }

  RankRun run() {
    RankRun run;
    run.rank = p_.rank;
    prepareInputs();
    if (!plan_.multi()) {
      startClock();
      runOps(0);
    } else {
      // The side streams' threads are made, placed and given their priority before the clock
      // starts, as a training loop makes its streams once: in the step they cost 0.2-0.9 ms of a
      // 2-core machine's time, which no op of the model holds.
      std::vector<std::thread> threads;
      std::latch go(1);
      run.favoured.resize(streams_.size());
      for (uint32_t s = 1; s < streams_.size(); ++s)
        threads.emplace_back([this, s, &run, &go] {
          // A side stream of kernels is the rank's compute and keeps its cores; communication
          // stands for another engine and may run on any.
          if (communicationOnly(s)) {
            unpinThread();
            run.favoured[s] = {plan_.names[s], favourCommunicationThread()};
          }
          go.wait();
          if (!stop_) runStream(s);
        });
      try {
        startClock();
      } catch (...) {  // another rank failed before the step: the streams leave without running
        stop_ = true;
        go.count_down();
        for (auto& t : threads) t.join();
        throw;
      }
      go.count_down();
      runStream(0);
      for (auto& t : threads) t.join();
      std::erase_if(run.favoured, [](const auto& f) { return f.first.empty(); });
      if (error_) std::rethrow_exception(error_);
    }
    comm_.finish();
    run.seconds = std::chrono::duration<double>(Clock::now() - t0_).count();
    run.peak_bytes = values_.peak();
    for (auto& e : events_) run.events.insert(run.events.end(), std::make_move_iterator(e.begin()), std::make_move_iterator(e.end()));
    std::stable_sort(run.events.begin(), run.events.end(), [](const TraceEvent& a, const TraceEvent& b) { return a.index < b.index; });

    // Fetched vars, then persistable ones (or, without fetches, the results); never-touched ones get
    // their input value.
    std::vector<char> listed(p_.next_var_id, 0);
    auto keep = [&](const Var& v) {
      if (listed[v.id]) return;
      listed[v.id] = 1;
      Tensor& t = values_.at(v);
      run.kept.emplace_back(std::string(v.name), t.empty() ? programInput(v, p_.rank, o_) : t);
    };
    for (std::string_view name : p_.fetch)
      if (const Var* v = b_.lookup(name)) keep(*v);
    for (const auto& v : b_.vars)
      if (!v->removed && keptToEnd(*v)) keep(*v);
    return run;
  }

 private:
  struct StreamState {
    uint32_t done = 0;     // ops finished, in stream order (guarded by mu_)
    bool running = false;  // inside a kernel or a collective (guarded by mu_)
    uint32_t awaited = 0;  // streams blocked in waitFor until this one progresses (guarded by mu_)
  };

  const Program& p_;
  const Block& b_;
  Communicator& comm_;
  const ExecOptions& o_;
  const FusedViews fused_;  // before plan_, which orders the streams by it
  const StreamPlan plan_;
  Values values_;
  std::vector<Tensor> prepared_;  // by Var::id: program inputs made before the step, until their first read
  std::vector<std::atomic<uint32_t>> remaining_;  // by Var::id: ops still to use it
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StreamState> streams_;
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // the first failure; a RankAborted only when nothing better
  bool error_is_abort_ = false;
  std::vector<std::vector<TraceEvent>> events_;  // by stream
  Clock::time_point t0_;

  // Every rank's inputs are made: the step starts, on every rank at once where the backend can.
  void startClock() {
    comm_.startTogether();
    t0_ = Clock::now();
  }

  // A stream of collectives, sends and receives holds no core (as the kernels' leases do): its
  // thread waits on the other ranks and the emulated link.
  bool communicationOnly(uint32_t s) const {
    return std::all_of(plan_.ops_of[s].begin(), plan_.ops_of[s].end(),
                       [&](size_t i) { return asCollective(*plan_.ops[i]) || asPointToPoint(*plan_.ops[i]); });
  }

  void runStream(uint32_t s) {
    try {
      runOps(s);
    } catch (const Cancelled&) {
    } catch (...) {
      std::lock_guard lk(mu_);
      bool abort = false;
      try {
        throw;
      } catch (const RankAborted&) {
        abort = true;
      } catch (...) {
      }
      if (!error_ || (error_is_abort_ && !abort)) error_ = std::current_exception(), error_is_abort_ = abort;
      stop_ = true;
      comm_.cancel();
      cv_.notify_all();
    }
  }

  // The stream's ops in order; a run of sends and receives that form one group (analysis/p2p.h
  // sameP2PGroup: adjacent in the block, one ring) is issued at once.
  void runOps(uint32_t s) {
    const std::vector<size_t>& ops = plan_.ops_of[s];
    for (size_t k = 0; k < ops.size(); ++k) {
      if (!asPointToPoint(*plan_.ops[ops[k]])) {
        waitFor(ops[k], s);
        runOp(ops[k], s);
        continue;
      }
      std::vector<size_t> group{ops[k]};
      while (k + 1 < ops.size() && ops[k + 1] == ops[k] + 1 && sameP2PGroup(*plan_.ops[ops[k]], *plan_.ops[ops[k + 1]])) group.push_back(ops[++k]);
      for (size_t i : group) waitFor(i, s);
      runP2PGroup(group, s);
    }
  }

  void runP2PGroup(const std::vector<size_t>& group, uint32_t s) {
    const Program& p = p_;
    const std::string& file = p.job->path;
    setRunning(s, true);
    std::vector<std::vector<std::pair<const Var*, Tensor>>> outs(group.size());
    std::vector<P2PTransfer> transfers;
    int64_t ring = -1;
    for (size_t j = 0; j < group.size(); ++j) {
      const size_t index = group[j];
      const Op& op = *plan_.ops[index];
      auto fail = [&](const std::string& why) { throw InputError(file, opAt(p, b_, index), where(p, b_, index, op.type) + ": " + why); };
      auto pp = asPointToPoint(op);
      auto peer = p2pPartner(*p.job, p.rank, *pp);
      if (!peer) fail("ring " + std::to_string(pp->ring_id) + " or peer " + std::to_string(pp->peer) + " names no other member of the ring");
      if (!pp->tensor) fail(pp->kind == P2PKind::Send ? "needs input X" : "needs output Out");
      ring = pp->ring_id;
      fillInputs(op);
      P2PTransfer t;
      t.kind = pp->kind;
      t.peer = *peer;
      t.desc = OpDesc{std::string(op.type), p.rank, b_.idx, int64_t(index), file, opAt(p, b_, index)};
      t.desc.stream = plan_.names[s];
      t.desc.wire_bytes = pp->tensor->byteSize().value_or(0);
      if (pp->kind == P2PKind::Send) {
        t.data = &values_.at(*pp->tensor);
        if (t.data->empty()) fail("input \"" + std::string(pp->tensor->name) + "\" has no value (read after its last use?)");
      } else {
        outs[j].emplace_back(pp->tensor, Tensor(pp->tensor->dtype, pp->tensor->shape));
      }
      transfers.push_back(std::move(t));
    }
    // Output buffers have their final addresses only now (outs[j] no longer grows).
    for (size_t j = 0; j < group.size(); ++j)
      if (transfers[j].kind == P2PKind::Recv) transfers[j].out = &outs[j].front().second;
    const auto start = Clock::now();
    comm_.sendRecv(ring, transfers);
    for (size_t j = 0; j < group.size(); ++j) {
      TraceEvent ev{std::string(plan_.ops[group[j]]->type), true, int64_t(group[j])};
      ev.stream = plan_.names[s];
      ev.ring = ring;
      ev.bytes = transfers[j].desc.wire_bytes;
      finishOp(group[j], s, outs[j], std::move(ev), start, false);
    }
    setRunning(s, false, uint32_t(group.size()));
  }

  // Blocks until every op `i` waits for on another stream has finished. The wait gives up after
  // the timeout only while no stream of the rank runs anything: a stream inside a kernel makes
  // progress, one inside a collective is bounded by the backend's timeout.
  void waitFor(size_t i, uint32_t s) {
    if (plan_.waits[i].empty()) return;
    std::unique_lock lk(mu_);
    auto deadline = Clock::now() + o_.timeout;
    for (const StreamWait& w : plan_.waits[i]) {
      while (streams_[w.stream].done < w.count) {
        if (stop_) throw Cancelled{};
        bool busy = false;
        for (const auto& st : streams_) busy = busy || st.running;
        if (busy) deadline = Clock::now() + o_.timeout;
        if (Clock::now() >= deadline) {
          const Op& op = *plan_.ops[i];
          throw InputError(p_.job->path, opAt(p_, b_, i),
                           where(p_, b_, i, op.type) + " on stream '" + plan_.names[s] + "': timed out after " +
                               std::to_string(o_.timeout.count() / 1000.0).substr(0, 5) + " s waiting for op '" +
                               std::string(plan_.ops[w.op]->type) + "' (op " + std::to_string(w.op) + ") on stream '" +
                               plan_.names[w.stream] + "', which does not progress");
        }
        ++streams_[w.stream].awaited;
        cv_.wait_for(lk, kPollInterval);
        --streams_[w.stream].awaited;
      }
    }
  }

  void setRunning(uint32_t s, bool on, uint32_t ops = 1) {
    if (!plan_.multi()) return;
    std::lock_guard lk(mu_);
    streams_[s].running = on;
    if (on) return;
    streams_[s].done += ops;
    // Only a stream waiting for this one is woken: on two cores, waking the comm stream at every
    // compute op had doubled the gap between ops (its thread takes a core to find nothing to do).
    // Whether a stream is running matters only to a waiter's timeout, which polls.
    if (streams_[s].awaited) cv_.notify_all();
  }

  void runOp(size_t index, uint32_t s) {
    const Op& op = *plan_.ops[index];
    const Block& b = b_;
    const Program& p = p_;
    const std::string& file = p.job->path;
    auto fail = [&](const std::string& why) { throw InputError(file, opAt(p, b, index), where(p, b, index, op.type) + ": " + why); };
    setRunning(s, true);
    fillInputs(op);
    // Outputs: fresh buffers of the declared dtype and shape (an in-place output such as sgd's
    // ParamOut gets its own buffer, so the kernel reads the old value intact).
    std::vector<std::pair<const Var*, Tensor>> outs;
    forEachArg(op.outputs, [&](const Var& v) {
      for (const auto& [w, t] : outs)
        if (w == &v) return;
      outs.emplace_back(&v, Tensor(v.dtype, replayShape(op, v)));
    });
    const auto start = Clock::now();
    TraceEvent ev{std::string(op.type), false, int64_t(index)};
    ev.stream = plan_.names[s];
    auto c = asCollective(op);
    if (c && c->kind != CollectiveKind::KernelAllReduce) {
      ev.collective = true;
      ev.ring = c->ring_id;
      Var* in = op.in(c->in_slot);
      Var* out = op.out(c->out_slot);
      if (!in || !out) fail("needs input slot " + std::string(c->in_slot) + " and output slot " + std::string(c->out_slot));
      const Tensor& x = values_.at(*in);
      if (x.empty()) fail("input \"" + std::string(in->name) + "\" has no value (read after its last use?)");
      Tensor* y = nullptr;
      for (auto& [w, t] : outs)
        if (w == out) y = &t;
      ev.bytes = int64_t(x.bytes());
      OpDesc d{std::string(op.type), p.rank, b.idx, int64_t(index), file, opAt(p, b, index)};
      d.stream = plan_.names[s];
      d.wire_bytes = collectiveBytes(op, *c, *p.job, true).value_or(int64_t(x.bytes()));
      switch (c->kind) {
        case CollectiveKind::Identity:
          if (x.numel() != y->numel() || x.storage() != y->storage()) fail("output shape or dtype differs from the input's");
          if (x.bytes()) std::memcpy(y->raw(), x.raw(), x.bytes());
          ev.collective = false;
          break;
        case CollectiveKind::AllReduce:
          if (int(c->reduce) < 0 || int(c->reduce) > 4) fail("reduce_type " + std::to_string(int(c->reduce)) + " is not one of 0..4");
          comm_.allReduce(c->ring_id, x, *y, c->reduce, d);
          break;
        case CollectiveKind::ReduceScatter: comm_.reduceScatter(c->ring_id, x, *y, d); break;
        case CollectiveKind::AllGather: comm_.allGather(c->ring_id, x, *y, d); break;
        case CollectiveKind::Broadcast:
        case CollectiveKind::Reduce: {
          const ProcessGroup* g = p.job->group(c->ring_id);
          if (!g) fail("ring " + std::to_string(c->ring_id) + " has no process group");
          if (c->root < 0 || c->root >= int64_t(g->ranks.size()))
            fail(std::string(collectiveRootAttr(c->kind)) + " " + std::to_string(c->root) + " is not a position in ring " + std::to_string(c->ring_id));
          int64_t root = g->ranks[size_t(c->root)];
          if (c->kind == CollectiveKind::Broadcast) comm_.broadcast(c->ring_id, x, *y, root, d);
          else comm_.reduce(c->ring_id, x, *y, root, d);
          break;
        }
        case CollectiveKind::KernelAllReduce: break;  // runs its kernel below
      }
    } else if (OpView view(op); view.has(trait::Source)) {
      // pd_op.data, builtin.parameter: the program's inputs, fed as replay feeds any input.
      for (auto& [v, t] : outs) t = prepared_[v->id].empty() ? programInput(*v, p.rank, o_) : std::move(prepared_[v->id]);
    } else {
      KernelFn fn = view.def() ? kernelFor(*view.def()) : nullptr;
      if (!fn) fail("replay does not support this op");
      OpTensorsIO io(view, [this](const Var& v) { return &values_.at(v); }, outs);
      KernelContext ctx{view, p.rank, o_.seed, io};
      // A kernel that communicates holds no core: it waits for the other members (as collectives do).
      std::optional<CommRing> ring;
      if (c) {
        const ProcessGroup* g = p.job->group(c->ring_id);
        if (!g || g->positionOf(p.rank) < 0) fail("rank " + std::to_string(p.rank) + " is not a member of ring " + std::to_string(c->ring_id));
        OpDesc d{std::string(op.type), p.rank, b.idx, int64_t(index), file, opAt(p, b, index)};
        d.stream = plan_.names[s];
        ring.emplace(comm_, c->ring_id, *g, p.rank, std::move(d));
        ctx.ring = &*ring;
        ev.collective = true;
        ev.ring = c->ring_id;
        ev.bytes = collectiveBytes(op, *c, *p.job, false).value_or(0);
      }
      try {
        std::optional<CoreLease> cores;
        if (!c) cores.emplace(view.has(trait::Blas) || view.has(trait::Threaded) ? cpuBudget().blas_threads : 1);
        fn(ctx);
      } catch (const InputError&) {
        throw;
      } catch (const KernelError& e) {
        fail(e.what());
      } catch (const std::invalid_argument& e) {
        fail(e.what());
      } catch (const std::logic_error& e) {
        fail(e.what());
      }
    }
    finishOp(index, s, outs, std::move(ev), start, true);
    setRunning(s, false);
  }

  // A training step finds its parameters and batch already in memory, and the cost model times
  // none of their making: every program input (a var an op reads as a buffer before any op writes
  // it, or a source op's output: pd_op.data, builtin.parameter) is generated before the clock
  // starts. It is handed over at its first read, or when its source op runs, and counted in the
  // peak from then, as the liveness the memory budget checks has it.
  void prepareInputs() {
    prepared_.resize(p_.next_var_id);
    auto prepare = [&](const Var& v) {
      if (prepared_[v.id].empty()) prepared_[v.id] = programInput(v, p_.rank, o_);
    };
    for (const Op* op : plan_.ops) {
      forEachBufferInput(*op, prepare);
      if (OpView(*op).has(trait::Source)) forEachArg(op->outputs, prepare);
    }
  }
  void fillInputs(const Op& op) {
    forEachBufferInput(op, [&](const Var& v) { values_.adopt(v, prepared_[v.id]); });
  }
  template <typename F>
  void forEachBufferInput(const Op& op, F f) {
    for (const Slot& sl : op.inputs)
      if (readsBuffer(op, sl.name))
        for (const Arg& a : sl.args)
          if (a.var && plan_.is_input[a.var->id]) f(*a.var);
  }

  // Rounds, traces and stores an op's outputs, then releases what it used last.
  void finishOp(size_t index, uint32_t s, std::vector<std::pair<const Var*, Tensor>>& outs, TraceEvent ev, Clock::time_point start, bool round) {
    const Op& op = *plan_.ops[index];
    // The one place float16/bfloat16 values are rounded (runtime/half.h): kernels and collectives
    // compute in float32 and what a half var stores is its format's value, as on the device
    // (part of the op's time). A receive gets what its sender already stored, and a view (reshape)
    // shares bytes already rounded: neither is written again.
    if (round)
      for (auto& [v, t] : outs)
        if (!t.sharesBuffer()) t.roundToDType();
    if (o_.trace) {
      ev.start_us = std::chrono::duration<double, std::micro>(start - t0_).count();
      ev.dur_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      events_[s].push_back(std::move(ev));
    }
    for (auto& [v, t] : outs) values_.set(*v, std::move(t));
    if (!fused_.empty())
      for (auto& [v, t] : outs)
        fused_.afterWrite(op, *v, [&](const Var& x) -> Tensor& { return values_.at(x); },
                          [&](const Var& x, Tensor value) { values_.set(x, std::move(value)); });
    // Release every var this op was the last user of, on any stream.
    releaseUsed(op);
  }

  // The op's uses as the plan counts them: buffer reads and writes, each var once.
  void releaseUsed(const Op& op) {
    std::vector<const Var*> used;
    auto add = [&](const Var& v) {
      for (const Var* u : used)
        if (u == &v) return;
      used.push_back(&v);
    };
    for (const Slot& sl : op.inputs)
      if (readsBuffer(op, sl.name))
        for (const Arg& a : sl.args)
          if (a.var) add(*a.var);
    forEachArg(op.outputs, add);
    for (const Var* v : used)
      if (remaining_[v->id].fetch_sub(1, std::memory_order_acq_rel) == 1 && !keptToEnd(*v)) values_.release(*v);
  }
};

}  // namespace

RankRun executeProgram(const Program& p, Communicator& comm, const ExecOptions& o) {
  if (p.blocks.empty()) {
    RankRun run;
    run.rank = p.rank;
    return run;
  }
  checkReplayable(p);
  RankExecutor ex(p, comm, o);
  return ex.run();
}

}  // namespace spopt::rt
