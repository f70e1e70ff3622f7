#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstring>
#include <filesystem>

#include "ops/op_view.h"
#include "runtime/inputs.h"
#include "runtime/kernels/kernels.h"
#include "runtime/npy.h"
#include "runtime/op_site.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using Clock = std::chrono::steady_clock;

// A collective (the communicator runs it), an op with a kernel (a kernel all-reduce needs one
// too), or a program input replay feeds.
bool replayable(const Op& op) {
  ResolvedOp r = resolveOp(op.type);
  if (!r) return false;
  bool by_comm = (r.def->collective && r.def->collective != CollectiveKind::KernelAllReduce) || r.def->p2p;
  return by_comm || kernelFor(*r.def) || r.def->has(trait::Source);
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

void checkOpsReplayable(const Job& job) {
  std::vector<std::pair<std::string_view, size_t>> types;  // in order of first use, with counts
  std::string first;
  size_t count = 0;
  for (const auto& p : job.programs) {
    if (p->blocks.empty()) continue;
    const Block& b = entryBlock(*p);
    size_t index = 0;
    for (const Op& op : b.ops) {
      if (!replayable(op)) {
        if (first.empty()) first = opAt(*p, b, index);
        ++count;
        auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return t.first == op.type; });
        if (it == types.end()) types.emplace_back(op.type, 1);
        else ++it->second;
      }
      ++index;
    }
  }
  if (count < 2) return;  // one op: checkReplayable names it
  std::string list;
  for (const auto& [t, n] : types) list += (list.empty() ? "" : ", ") + std::string(t) + " x" + std::to_string(n);
  throw InputError(job.path, first, "not replayable: " + list + " (" + std::to_string(count) + " ops of " +
                                        std::to_string(types.size()) + (types.size() == 1 ? " type" : " types") +
                                        " outside the replay catalogue)");
}

void checkReplayable(const Program& p) {
  const std::string& file = p.job->path;
  if (p.blocks.empty()) return;
  const Block& b = entryBlock(p);
  size_t index = 0;
  for (const Op& op : b.ops) {
    auto here = [&](const std::string& why) { throw InputError(file, opAt(p, b, index), where(p, b, index, op.type) + ": " + why); };
    auto coll = asCollective(op);
    if (!replayable(op)) here("replay does not support this op");
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
        if (d < 0) throw InputError(file, programPointer(p.position), "var \"" + std::string(v->name) +
                                    "\" (rank " + std::to_string(p.rank) + ") has an unknown (-1) dim; replay needs every shape");
}

Tensor programInput(const Var& v, int64_t rank, const ExecOptions& o) {
  if (!o.inputs_dir.empty()) {
    std::filesystem::path file = std::filesystem::path(o.inputs_dir) / (std::string(v.name) + ".npy");
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) {
      Tensor t = readNpy(file.string());
      ShardLayout l = shardLayout(v, rank);
      // A half var holds what its format represents, whatever precision the file has.
      auto rounded = [](Tensor r) {
        r.roundToDType();
        return r;
      };
      if (t.shape() == l.global_shape) return rounded(sliceGlobal(t, l, v.shape, v.dtype));
      if (t.shape() == v.shape) return rounded(sliceGlobal(t, ShardLayout{v.shape, std::vector<int64_t>(v.shape.size(), 0)}, v.shape, v.dtype));
      auto text = [](const std::vector<int64_t>& s) {
        std::string r = "[";
        for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
        return r + "]";
      };
      throw InputError(file.string(), "", "shape " + text(t.shape()) + " matches neither var \"" + std::string(v.name) +
                                              "\"'s local shape " + text(v.shape) + " nor its global shape " + text(l.global_shape));
    }
  }
  Tensor t = fillInput(v, rank, o.seed);
  t.roundToDType();
  return t;
}

}  // namespace spopt::rt
