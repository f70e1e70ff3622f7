#include "runtime/executor.h"

#include <chrono>
#include <deque>
#include <cstring>
#include <filesystem>

#include "analysis/no_need_buffer.h"
#include "runtime/inputs.h"
#include "runtime/kernels/kernels.h"
#include "runtime/npy.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

std::string opAt(const Program& p, const Block& b, size_t index) {
  return "/programs/" + std::to_string(p.position) + "/blocks/" + std::to_string(b.position) + "/ops/" + std::to_string(index);
}

std::string where(const Program& p, const Block& b, size_t index, std::string_view type) {
  return "op '" + std::string(type) + "' (rank " + std::to_string(p.rank) + ", block " + std::to_string(b.idx) + ", op " +
         std::to_string(index) + ")";
}


template <typename F>
void forEachArg(const std::vector<Slot>& slots, F f) {
  for (const auto& s : slots)
    for (const auto& a : s.args)
      if (a.var) f(*a.var);
}

// The var values of one rank, indexed by Var::id.
class Values {
 public:
  explicit Values(size_t n) : t_(n) {}
  Tensor& at(const Var& v) { return t_[v.id]; }
  void set(const Var& v, Tensor t) {
    current_ -= t_[v.id].empty() ? 0 : t_[v.id].bytes();
    current_ += t.bytes();
    t_[v.id] = std::move(t);
    if (current_ > peak_) peak_ = current_;
  }
  void release(const Var& v) {
    if (t_[v.id].empty()) return;
    current_ -= t_[v.id].bytes();
    t_[v.id] = Tensor();
  }
  size_t peak() const { return peak_; }

 private:
  std::vector<Tensor> t_;
  size_t current_ = 0, peak_ = 0;
};

class OpIO final : public KernelIO {
 public:
  OpIO(const Op& op, Values& values, std::vector<std::pair<const Var*, Tensor>>& outs) : op_(op), values_(values), outs_(outs) {}
  const Tensor* input(std::string_view slot, size_t i) const override {
    const Var* var = op_.in(slot, i);
    if (!var) return nullptr;
    Tensor& t = values_.at(*var);
    if (!t.empty()) return &t;
    // A slot whose buffer the kernel does not read (analysis/no_need_buffer.h): its var may be
    // released already, or never have had a buffer; the kernel gets its shape and dtype only.
    if (!readsBuffer(op_, slot)) {
      shape_only_.push_back(Tensor::shapeOnly(var->dtype, var->shape));
      return &shape_only_.back();
    }
    return nullptr;
  }
  size_t inputCount(std::string_view slot) const override { return op_.inputCount(slot); }
  Tensor* output(std::string_view slot, size_t i) override {
    const Var* var = op_.out(slot, i);
    for (auto& [v, t] : outs_)
      if (var && v == var) return &t;
    return nullptr;
  }
  size_t outputCount(std::string_view slot) const override { return op_.outputCount(slot); }

 private:
  const Op& op_;
  Values& values_;
  std::vector<std::pair<const Var*, Tensor>>& outs_;
  mutable std::deque<Tensor> shape_only_;  // stable addresses for the kernel's pointers
};

}  // namespace

const Block& entryBlock(const Program& p) {
  for (const auto& b : p.blocks)
    if (b->parent_idx < 0) return *b;
  return *p.blocks.front();
}

RankRun CommFactory::execute(const Job& job, int64_t rank, const ExecOptions& o) {
  auto comm = make(job);
  return executeProgram(*job.program(rank), *comm, o);
}

BlockLiveness computeLiveness(const Program& p, const LivenessOptions& o) {
  if (p.blocks.empty()) return {};
  Liveness all = computeProgramLiveness(p, o);
  return std::move(all.blocks[entryBlock(p).position]);
}

void checkReplayable(const Program& p) {
  const std::string& file = p.job->path;
  if (p.blocks.empty()) return;
  const Block& b = entryBlock(p);
  size_t index = 0;
  for (const Op& op : b.ops) {
    auto here = [&](const std::string& why) { throw InputError(file, opAt(p, b, index), where(p, b, index, op.type) + ": " + why); };
    auto coll = asCollective(op);
    if (!coll && !findKernel(op.type)) here("replay does not support this op");
    if (coll && coll->ring_id < 0 && coll->kind != CollectiveKind::Identity) here("ring_id is missing or not an integer");
    for (const auto* slots : {&op.inputs, &op.outputs})
      forEachArg(*slots, [&](const Var& v) {
        for (int64_t d : v.shape)
          if (d < 0) here("var \"" + std::string(v.name) + "\" has an unknown (-1) dim; replay needs every shape");
      });
    ++index;
  }
  for (const auto& v : b.vars)
    if (!v->removed && keptToEnd(*v))
      for (int64_t d : v->shape)
        if (d < 0) throw InputError(file, "/programs/" + std::to_string(p.position), "var \"" + std::string(v->name) +
                                    "\" (rank " + std::to_string(p.rank) + ") has an unknown (-1) dim; replay needs every shape");
}

Tensor programInput(const Var& v, int64_t rank, const ExecOptions& o) {
  if (!o.inputs_dir.empty()) {
    std::filesystem::path file = std::filesystem::path(o.inputs_dir) / (std::string(v.name) + ".npy");
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) {
      Tensor t = readNpy(file.string());
      ShardLayout l = shardLayout(v, rank);
      if (t.shape() == l.global_shape) return sliceGlobal(t, l, v.shape, v.dtype);
      if (t.shape() == v.shape) return sliceGlobal(t, ShardLayout{v.shape, std::vector<int64_t>(v.shape.size(), 0)}, v.shape, v.dtype);
      auto text = [](const std::vector<int64_t>& s) {
        std::string r = "[";
        for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
        return r + "]";
      };
      throw InputError(file.string(), "", "shape " + text(t.shape()) + " matches neither var \"" + std::string(v.name) +
                                              "\"'s local shape " + text(v.shape) + " nor its global shape " + text(l.global_shape));
    }
  }
  return fillInput(v, rank, o.seed);
}

RankRun executeProgram(const Program& p, Communicator& comm, const ExecOptions& o) {
  RankRun run;
  run.rank = p.rank;
  if (p.blocks.empty()) return run;
  checkReplayable(p);
  const Block& b = entryBlock(p);
  const BlockLiveness live = computeLiveness(p);
  std::vector<char> is_input(p.next_var_id, 0);
  for (const Var* v : live.inputs) is_input[v->id] = 1;
  std::vector<char> released(p.next_var_id, 0);
  Values values(p.next_var_id);
  const std::string& file = p.job->path;
  const auto t0 = Clock::now();
  auto micros = [&](Clock::time_point t) { return std::chrono::duration<double, std::micro>(t - t0).count(); };

  std::vector<std::pair<const Var*, Tensor>> outs;
  size_t index = 0;
  for (const Op& op : b.ops) {
    auto fail = [&](const std::string& why) { throw InputError(file, opAt(p, b, index), where(p, b, index, op.type) + ": " + why); };
    // Inputs: generate program inputs on first read.
    // Shape-only reads neither generate an input nor revive a released buffer.
    for (const Slot& s : op.inputs)
      for (const Arg& a : s.args)
        if (a.var && values.at(*a.var).empty() && is_input[a.var->id] && !released[a.var->id] && readsBuffer(op, s.name))
          values.set(*a.var, programInput(*a.var, p.rank, o));
    // Outputs: fresh buffers of the declared dtype and shape (an in-place output such as sgd's
    // ParamOut gets its own buffer, so the kernel reads the old value intact).
    outs.clear();
    forEachArg(op.outputs, [&](const Var& v) {
      for (const auto& [w, t] : outs)
        if (w == &v) return;
      outs.emplace_back(&v, Tensor(v.dtype, v.shape));
    });
    const auto start = Clock::now();
    TraceEvent ev{std::string(op.type), false, int64_t(index)};
    if (auto c = asCollective(op)) {
      ev.collective = true;
      ev.ring = c->ring_id;
      Var* in = op.in(c->in_slot);
      Var* out = op.out(c->out_slot);
      if (!in || !out) fail("needs input slot " + std::string(c->in_slot) + " and output slot " + std::string(c->out_slot));
      const Tensor& x = values.at(*in);
      if (x.empty()) fail("input \"" + std::string(in->name) + "\" has no value (read after its last use?)");
      Tensor* y = nullptr;
      for (auto& [w, t] : outs)
        if (w == out) y = &t;
      ev.bytes = int64_t(x.bytes());
      OpDesc d{std::string(op.type), p.rank, b.idx, int64_t(index), file, opAt(p, b, index)};
      switch (c->kind) {
        case CollectiveKind::Identity:
          if (x.numel() != y->numel() || x.storage() != y->storage()) fail("output shape or dtype differs from the input's");
          if (x.bytes()) std::memcpy(y->raw(), x.raw(), x.bytes());
          ev.collective = false;
          break;
        case CollectiveKind::AllReduce:
          if (int(c->reduce) < 0 || int(c->reduce) > 4) fail("reduce_type " + std::to_string(int(c->reduce)) + " is not one of 0..4");
          comm.allReduce(c->ring_id, x, *y, c->reduce, d);
          break;
        case CollectiveKind::ReduceScatter: comm.reduceScatter(c->ring_id, x, *y, d); break;
        case CollectiveKind::AllGather: comm.allGather(c->ring_id, x, *y, d); break;
        case CollectiveKind::Broadcast: {
          const ProcessGroup* g = p.job->group(c->ring_id);
          if (!g) fail("ring " + std::to_string(c->ring_id) + " has no process group");
          int64_t root = op.attrs.getInt("root").value_or(0);
          if (root < 0 || root >= int64_t(g->ranks.size())) fail("root " + std::to_string(root) + " is not a position in ring " + std::to_string(c->ring_id));
          comm.broadcast(c->ring_id, x, *y, g->ranks[size_t(root)], d);
          break;
        }
      }
    } else {
      KernelFn fn = findKernel(op.type);
      if (!fn) fail("replay does not support this op");
      OpIO io(op, values, outs);
      KernelContext ctx{op, p.rank, o.seed, io};
      try {
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
    if (o.trace) {
      ev.start_us = micros(start);
      ev.dur_us = micros(Clock::now()) - ev.start_us;
      run.events.push_back(std::move(ev));
    }
    for (auto& [v, t] : outs) values.set(*v, std::move(t));
    for (const Var* v : live.release_after[index]) {
      values.release(*v);
      released[v->id] = 1;
    }
    ++index;
  }
  comm.finish();
  run.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run.peak_bytes = values.peak();

  // Fetched vars, then persistable ones; never-touched ones get their input value.
  std::vector<char> listed(p.next_var_id, 0);
  auto keep = [&](const Var& v) {
    if (listed[v.id]) return;
    listed[v.id] = 1;
    Tensor& t = values.at(v);
    run.kept.emplace_back(std::string(v.name), t.empty() ? programInput(v, p.rank, o) : t);
  };
  for (std::string_view name : p.fetch)
    if (const Var* v = b.lookup(name)) keep(*v);
  for (const auto& v : b.vars)
    if (!v->removed && v->persistable) keep(*v);
  return run;
}

}  // namespace spopt::rt
