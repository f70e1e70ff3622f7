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

}  // namespace spopt::rt
