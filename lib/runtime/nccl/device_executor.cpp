#include "runtime/nccl/device_executor.h"

#include <cublas_v2.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "analysis/p2p.h"
#include "runtime/kernels/kernels.h"
#include "runtime/nccl/device_ops.h"
#include "runtime/op_io.h"
#include "runtime/op_site.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

// Named streams and events of one rank; stream 0 is the compute stream.
class Streams {
 public:
  explicit Streams() { add(); }
  ~Streams() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  cudaStream_t at(size_t i) const { return streams_[i]; }
  const std::string& name(size_t i) const { return names_[i]; }  // for the trace's tracks
  size_t count() const { return streams_.size(); }
  // The op's stream: its dist_attr execution_stream, "default" (or none) being the compute stream.
  size_t of(const Op& op) {
    if (!op.hasDistAttr()) return 0;
    auto name = op.dist_attr.getString("execution_stream");
    if (!name || name->empty() || *name == "default") return 0;
    auto it = by_name_.find(*name);
    if (it != by_name_.end()) return it->second;
    if (streams_.size() >= 64) throw DeviceError("more than 63 named execution streams");
    by_name_[*name] = streams_.size();
    names_.push_back(*name);
    add();
    return streams_.size() - 1;
  }
  // An event recorded now on stream i (timing enabled when asked); owned here.
  cudaEvent_t record(size_t i, bool timing = false) {
    cudaEvent_t e;
    cudaCheck(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming), "cudaEventCreate");
    events_.push_back(e);
    cudaCheck(cudaEventRecord(e, streams_[i]), "cudaEventRecord");
    return e;
  }
  void wait(size_t i, cudaEvent_t e) { cudaCheck(cudaStreamWaitEvent(streams_[i], e, 0), "cudaStreamWaitEvent"); }

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
  std::map<std::string, size_t> by_name_;
  std::vector<std::string> names_{"default"};
  void add() {
    cudaStream_t s;
    cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    streams_.push_back(s);
  }
};

// A var's value and where it lives in stream order.
struct DevValue {
  DevTensor t;
  size_t stream = 0;            // stream of the op that produced it
  cudaEvent_t ready = nullptr;  // recorded after that op (only when several streams are in use)
  uint64_t touched = 0;         // bit i: stream i used the buffer
};

class DevValues {
 public:
  explicit DevValues(size_t n) : v_(n) {}
  DevValue& at(const Var& v) { return v_[v.id]; }
  void set(const Var& v, DevValue value) {
    current_ -= v_[v.id].t.empty() ? 0 : v_[v.id].t.bytes();
    current_ += value.t.bytes();
    v_[v.id] = std::move(value);
    if (current_ > peak_) peak_ = current_;
  }
  void release(const Var& v) {
    if (v_[v.id].t.empty()) return;
    current_ -= v_[v.id].t.bytes();
    v_[v.id] = DevValue{};
  }
  size_t peak() const { return peak_; }

 private:
  std::vector<DevValue> v_;
  size_t current_ = 0, peak_ = 0;
};

class OpDevIO final : public DeviceOpIO {
 public:
  OpDevIO(const OpView& op, DevValues& values, std::vector<std::pair<const Var*, DevTensor>>& outs) : op_(op), values_(values), outs_(outs) {}
  const DevTensor* input(std::string_view slot, size_t i) const override {
    const Var* var = op_.in(slot, i);
    if (!var) return nullptr;
    DevValue& v = values_.at(*var);
    return v.t.empty() ? nullptr : &v.t;
  }
  size_t inputCount(std::string_view slot) const override { return op_.inputCount(slot); }
  DevTensor* output(std::string_view slot, size_t i) override {
    const Var* var = op_.out(slot, i);
    for (auto& [v, t] : outs_)
      if (var && v == var) return &t;
    return nullptr;
  }
  size_t outputCount(std::string_view slot) const override { return op_.outputCount(slot); }

 private:
  const OpView& op_;  // canonical slot names
  DevValues& values_;
  std::vector<std::pair<const Var*, DevTensor>>& outs_;
};

// Attribute readers need a KernelContext; device ops get one whose io holds no tensors.
class NoTensorsIO final : public KernelIO {
 public:
  const Tensor* input(std::string_view, size_t) const override { return nullptr; }
  size_t inputCount(std::string_view) const override { return 0; }
  Tensor* output(std::string_view, size_t) override { return nullptr; }
  size_t outputCount(std::string_view) const override { return 0; }
};

Tensor toHost(const DevTensor& d, cudaStream_t s) {
  Tensor t(d.dtype, d.shape);
  if (d.bytes()) cudaCheck(cudaMemcpyAsync(t.raw(), d.buf.get(), d.bytes(), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  cudaCheck(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return t;
}

void upload(const Tensor& h, DevTensor& d, cudaStream_t s) {
  if (h.bytes() != d.bytes()) throw DeviceError("upload: size mismatch");
  if (h.bytes()) cudaCheck(cudaMemcpyAsync(d.buf.get(), h.raw(), h.bytes(), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
}

// A KernelAllReduce op's ring for its host kernel: each call moves the small buffer up, all-reduces
// it with the rank's device communicator on the op's stream and brings it back.
class DeviceRing : public KernelRing {
 public:
  DeviceRing(DeviceComm& comm, int64_t ring, const ProcessGroup& g, int64_t rank, const OpDesc& d, cudaStream_t s)
      : comm_(comm), ring_(ring), size_(int64_t(g.ranks.size())), position_(g.positionOf(rank)), d_(d), s_(s) {}
  int64_t size() const override { return size_; }
  int64_t position() const override { return position_; }
  void allReduce(Tensor& buf, ReduceOp op) override {
    DevTensor x = allocDevice(buf.dtype(), buf.shape(), s_, s_), y = allocDevice(buf.dtype(), buf.shape(), s_, s_);
    upload(buf, x, s_);
    comm_.allReduce(ring_, x, y, op, d_, s_);
    buf = toHost(y, s_);  // synchronises the stream: x and y are done with
  }

 private:
  DeviceComm& comm_;
  int64_t ring_, size_, position_;
  const OpDesc& d_;
  cudaStream_t s_;
};

std::vector<std::string> eventsToWait(const Op& op) {
  std::vector<std::string> names;
  if (!op.hasDistAttr()) return names;
  const std::string_view* raw = op.dist_attr.find("events_to_wait");
  if (!raw) return names;
  auto j = nlohmann::json::parse(*raw, nullptr, false);
  if (j.is_array())
    for (const auto& e : j)
      if (e.is_string() && !e.get<std::string>().empty()) names.push_back(e.get<std::string>());
  return names;
}

// One cuBLAS handle per stream: a handle keeps one workspace, and GEMMs running at once on two
// streams must not share it (cublasSetStream on a shared handle would also reset its workspace).
class BlasHandles {
 public:
  BlasHandles() = default;
  BlasHandles(const BlasHandles&) = delete;
  BlasHandles& operator=(const BlasHandles&) = delete;
  ~BlasHandles() {
    for (cublasHandle_t h : handles_)
      if (h) cublasDestroy(h);
  }
  cublasHandle_t forStream(size_t index, cudaStream_t stream) {
    if (handles_.size() <= index) handles_.resize(index + 1, nullptr);
    cublasHandle_t& h = handles_[index];
    if (!h) {
      if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw DeviceError("cublasCreate failed");
      cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);  // float32 GEMMs accumulate in float32, no TF32
      cublasSetStream(h, stream);
    }
    return h;
  }

 private:
  std::vector<cublasHandle_t> handles_;
};

}  // namespace

RankRun executeOnDevice(const Program& p, DeviceComm& comm, const ExecOptions& o, const DeviceRunOptions& dro) {
  RankRun run;
  run.rank = p.rank;
  if (p.blocks.empty()) return run;
  checkReplayable(p);
  cudaCheck(cudaSetDevice(dro.device), "cudaSetDevice");
  // Keep freed buffers in the stream-ordered pool (its default threshold hands memory back to the
  // driver at every synchronisation, which would make each host-fallback op reallocate).
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, dro.device) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  const Block& b = entryBlock(p);
  // Every read keeps a buffer: the device kernels take buffers even for shape-only slots.
  const BlockLiveness live = computeLiveness(p, LivenessOptions{false});
  std::vector<char> is_input(p.next_var_id, 0);
  for (const Var* v : live.inputs) is_input[v->id] = 1;
  const std::string& file = p.job->path;

  Streams streams;
  BlasHandles blas;
  DevValues values(p.next_var_id);
  // Several streams need events between them; one stream orders everything by itself.
  bool multi = false;
  for (const Op& op : b.ops) multi = multi || streams.of(op) != 0;
  std::map<std::string, cudaEvent_t> named;
  NoTensorsIO no_tensors;
  const auto t0 = Clock::now();
  cudaEvent_t base = o.trace ? streams.record(0, true) : nullptr;
  struct Timed {
    TraceEvent ev;
    cudaEvent_t start, end;
  };
  std::vector<Timed> timed;

  // Before a buffer goes (freed on the compute stream), the compute stream waits for every other
  // stream that used it.
  auto retire = [&](const DevValue& dv) {
    if (dv.t.empty()) return;
    for (size_t k = 1; k < streams.count(); ++k)
      if (dv.touched & (uint64_t(1) << k)) streams.wait(0, streams.record(k));
  };
  std::vector<std::pair<const Var*, DevTensor>> outs;
  size_t index = 0;
  for (const Op& op : b.ops) {
    auto fail = [&](const std::string& why) { throw InputError(file, opAt(p, b, index), where(p, b, index, op.type) + ": " + why); };
    const size_t si = streams.of(op);
    cudaStream_t s = streams.at(si);
    for (const std::string& e : eventsToWait(op))
      if (auto it = named.find(e); it != named.end()) streams.wait(si, it->second);
    // Inputs: program inputs filled on the host and copied up on first read; others ordered
    // after their producer's stream.
    forEachArg(op.inputs, [&](const Var& v) {
      DevValue& dv = values.at(v);
      if (dv.t.empty() && is_input[v.id]) {
        Tensor h = programInput(v, p.rank, o);
        DevValue fresh{allocDevice(v.dtype, v.shape, s, streams.at(0)), si, nullptr, uint64_t(1) << si};
        upload(h, fresh.t, s);
        if (multi) fresh.ready = streams.record(si);  // a reader on another stream waits for the copy
        values.set(v, std::move(fresh));
        return;
      }
      if (dv.t.empty()) return;
      if (dv.stream != si && dv.ready) streams.wait(si, dv.ready);
      dv.touched |= uint64_t(1) << si;
    });
    outs.clear();
    forEachArg(op.outputs, [&](const Var& v) {
      for (const auto& [w, t] : outs)
        if (w == &v) return;
      outs.emplace_back(&v, allocDevice(v.dtype, replayShape(op, v), s, streams.at(0)));
    });
    TraceEvent ev{std::string(op.type), false, int64_t(index)};
    ev.stream = streams.name(si);
    cudaEvent_t start = o.trace ? streams.record(si, true) : nullptr;
    auto c = asCollective(op);
    if (auto pp = asPointToPoint(op)) {
      auto peer = p2pPartner(*p.job, p.rank, *pp);
      if (!peer) fail("ring " + std::to_string(pp->ring_id) + " or peer " + std::to_string(pp->peer) + " names no other member of the ring");
      const bool send = pp->kind == P2PKind::Send;
      DevTensor* t = send ? (pp->tensor ? &values.at(*pp->tensor).t : nullptr) : (outs.empty() ? nullptr : &outs.front().second);
      if (!t || t->empty()) fail(send ? "its input X has no value" : "needs output Out");
      ev.collective = true;
      ev.ring = pp->ring_id;
      ev.bytes = int64_t(t->bytes());
      OpDesc d{std::string(op.type), p.rank, b.idx, int64_t(index), file, opAt(p, b, index)};
      const bool opens = op.self == b.ops.begin() || !sameP2PGroup(*std::prev(op.self), op);
      const bool closes = std::next(op.self) == b.ops.end() || !sameP2PGroup(op, *std::next(op.self));
      comm.sendRecv(pp->ring_id, pp->kind, *peer, *t, d, s, opens, closes);
    } else if (c && c->kind != CollectiveKind::KernelAllReduce) {
      ev.collective = true;
      ev.ring = c->ring_id;
      Var* in = op.in(c->in_slot);
      Var* out = op.out(c->out_slot);
      if (!in || !out) fail("needs input slot " + std::string(c->in_slot) + " and output slot " + std::string(c->out_slot));
      const DevTensor& x = values.at(*in).t;
      if (x.empty()) fail("input \"" + std::string(in->name) + "\" has no value (read after its last use?)");
      DevTensor* y = nullptr;
      for (auto& [w, t] : outs)
        if (w == out) y = &t;
      ev.bytes = int64_t(x.bytes());
      OpDesc d{std::string(op.type), p.rank, b.idx, int64_t(index), file, opAt(p, b, index)};
      switch (c->kind) {
        case CollectiveKind::Identity:
          if (x.numel != y->numel || x.storage() != y->storage()) fail("output shape or dtype differs from the input's");
          if (x.bytes()) cudaCheck(cudaMemcpyAsync(y->buf.get(), x.buf.get(), x.bytes(), cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
          ev.collective = false;
          break;
        case CollectiveKind::AllReduce:
          if (int(c->reduce) < 0 || int(c->reduce) > 4) fail("reduce_type " + std::to_string(int(c->reduce)) + " is not one of 0..4");
          comm.allReduce(c->ring_id, x, *y, c->reduce, d, s);
          break;
        case CollectiveKind::ReduceScatter: comm.reduceScatter(c->ring_id, x, *y, d, s); break;
        case CollectiveKind::AllGather: comm.allGather(c->ring_id, x, *y, d, s); break;
        case CollectiveKind::Broadcast:
        case CollectiveKind::Reduce: {
          const ProcessGroup* g = p.job->group(c->ring_id);
          if (!g) fail("ring " + std::to_string(c->ring_id) + " has no process group");
          if (c->root < 0 || c->root >= int64_t(g->ranks.size()))
            fail(std::string(collectiveRootAttr(c->kind)) + " " + std::to_string(c->root) + " is not a position in ring " + std::to_string(c->ring_id));
          int64_t root = g->ranks[size_t(c->root)];
          if (c->kind == CollectiveKind::Broadcast) comm.broadcast(c->ring_id, x, *y, root, d, s);
          else comm.reduce(c->ring_id, x, *y, root, d, s);
          break;
        }
        case CollectiveKind::KernelAllReduce: break;  // runs its kernel below
      }
    } else if (OpView source(op); source.has(trait::Source)) {
      // pd_op.data, builtin.parameter: the program's inputs, fed as every input is.
      for (auto& [v, t] : outs) upload(programInput(*v, p.rank, o), t, s);
    } else {
      OpView view(op);
      KernelContext host{view, p.rank, o.seed, no_tensors};
      // A kernel that communicates runs on the host with the op's ring (docs/ops.md).
      std::optional<DeviceRing> ring;
      OpDesc d{std::string(op.type), p.rank, b.idx, int64_t(index), file, opAt(p, b, index)};
      if (c) {
        const ProcessGroup* g = p.job->group(c->ring_id);
        if (!g || g->positionOf(p.rank) < 0) fail("rank " + std::to_string(p.rank) + " is not a member of ring " + std::to_string(c->ring_id));
        ring.emplace(comm, c->ring_id, *g, p.rank, d, s);
        ev.collective = true;
        ev.ring = c->ring_id;
      }
      try {
        // A PIR vector operand is taken apart into its parts on the host (OpTensorsIO) alone.
        DeviceKernelFn dfn = c || touchesVector(view) ? nullptr : findDeviceKernel(op.type);
        bool done = false;
        if (dfn) {
          OpDevIO io(view, values, outs);
          DeviceOpContext dc{host, io, s, blas.forStream(si, s)};
          done = dfn(dc);
        }
        if (!done) {
          KernelFn fn = findKernel(op.type);
          if (!fn) fail("replay does not support this op");
          // The CPU kernel on host copies, seen as on the local backend (runtime/op_io.h).
          std::map<const Var*, Tensor> ins;
          forEachArg(op.inputs, [&](const Var& v) {
            const DevTensor& t = values.at(v).t;
            if (!t.empty() && !ins.count(&v)) ins.emplace(&v, toHost(t, s));
          });
          std::vector<std::pair<const Var*, Tensor>> host_outs;
          for (const auto& [v, t] : outs) host_outs.emplace_back(v, Tensor(t.dtype, t.shape));
          OpTensorsIO io(
              view,
              [&](const Var& v) -> Tensor* {
                auto it = ins.find(&v);
                return it == ins.end() ? nullptr : &it->second;
              },
              host_outs);
          KernelContext hc{view, p.rank, o.seed, io, ring ? &*ring : nullptr};
          fn(hc);
          for (size_t k = 0; k < outs.size(); ++k) {
            DevTensor& t = outs[k].second;
            const Tensor& h = host_outs[k].second;
            // A kernel may give its result another shape (builtin.combine stacks equal parts).
            if (h.shape() != t.shape || h.dtype() != t.dtype) t = allocDevice(h.dtype(), h.shape(), s, streams.at(0));
            upload(h, t, s);
          }
          cudaCheck(cudaStreamSynchronize(s), "cudaStreamSynchronize");  // the host copies die here
        }
      } catch (const InputError&) {
        throw;
      } catch (const DeviceError&) {
        throw;
      } catch (const KernelError& e) {
        fail(e.what());
      } catch (const std::invalid_argument& e) {
        fail(e.what());
      } catch (const std::logic_error& e) {
        fail(e.what());
      }
    }
    cudaCheck(cudaGetLastError(), ("launching " + std::string(op.type)).c_str());
    if (o.trace) timed.push_back({std::move(ev), start, streams.record(si, true)});
    cudaEvent_t ready = multi ? streams.record(si) : nullptr;
    for (auto& [v, t] : outs) {
      retire(values.at(*v));  // an in-place output (sgd's ParamOut) replaces its input's buffer
      values.set(*v, DevValue{std::move(t), si, ready, uint64_t(1) << si});
    }
    if (op.hasDistAttr())
      if (auto e = op.dist_attr.getString("event_to_record"); e && !e->empty()) named[*e] = ready ? ready : streams.record(si);
    // Free on the compute stream once every stream that used the buffer is past it.
    for (const Var* v : live.release_after[index]) {
      retire(values.at(*v));
      values.release(*v);
    }
    ++index;
  }

  // Wait for every stream, polling so that a hung collective or another rank's failure ends the
  // run (ncclCommAbort) instead of blocking forever.
  const auto deadline = Clock::now() + dro.timeout;
  for (size_t k = 0; k < streams.count(); ++k) {
    for (;;) {
      cudaError_t q = cudaStreamQuery(streams.at(k));
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) cudaCheck(q, "cudaStreamQuery");
      if (dro.aborted && dro.aborted->load()) {
        comm.abort();
        throw RankAborted("aborted: another rank failed");
      }
      if (Clock::now() >= deadline) {
        comm.abort();
        throw InputError(file, programPointer(p.position),
                         "rank " + std::to_string(p.rank) + ": the device did not finish the program within " +
                             std::to_string(dro.timeout.count() / 1000.0).substr(0, 5) +
                             " s (a collective whose members never all issued it?)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run.peak_bytes = values.peak();
  for (auto& t : timed) {
    float a = 0, d = 0;
    cudaCheck(cudaEventElapsedTime(&a, base, t.start), "cudaEventElapsedTime");
    cudaCheck(cudaEventElapsedTime(&d, t.start, t.end), "cudaEventElapsedTime");
    t.ev.start_us = double(a) * 1e3;
    t.ev.dur_us = double(d) * 1e3;
    run.events.push_back(std::move(t.ev));
  }

  // Fetched vars, then persistable ones, as host copies; never-touched ones get their input value.
  std::vector<char> listed(p.next_var_id, 0);
  auto keep = [&](const Var& v) {
    if (listed[v.id]) return;
    listed[v.id] = 1;
    const DevTensor& t = values.at(v).t;
    run.kept.emplace_back(std::string(v.name), t.empty() ? programInput(v, p.rank, o) : toHost(t, streams.at(0)));
  };
  for (std::string_view name : p.fetch)
    if (const Var* v = b.lookup(name)) keep(*v);
  for (const auto& v : b.vars)
    if (!v->removed && v->persistable) keep(*v);
  return run;
}

}  // namespace spopt::rt
