#include "runtime/serial_check.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "ops/op_def.h"
#include "runtime/inputs.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

using ojson = nlohmann::ordered_json;
using VarValues = std::unordered_map<std::string, Tensor>;  // var name -> float64 tensor

Tensor asFloat64(const Tensor& t) {
  Tensor out(DType::Float64, t.shape());
  double* d = out.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) d[i] = t.valueAt(i);
  return out;
}

VarValues decodeKept(const std::string& text) {
  VarValues out;
  ojson j = ojson::parse(text);
  for (const auto& [name, v] : j.items()) {
    Tensor t(DType::Float64, v.at("shape").get<std::vector<int64_t>>());
    double* d = t.data<double>();
    const ojson& values = v.at("values");
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = fromJnum(values.at(size_t(i)));
    out.emplace(name, std::move(t));
  }
  return out;
}

const Var* entryVar(const Program& p, const std::string& name) {
  return p.blocks.empty() ? nullptr : p.blocks[0]->findLocal(name);
}

// The rows of `serial` that a parameter gathered from the ranks' blocks compares against.
struct Gathered {
  Tensor global;
  std::string problem;  // non-empty: why there is no global tensor
};

// Puts `name`'s global tensor together from every rank's block (the layout of inputs.h), checking
// that replicas agree and that the blocks cover it.
Gathered gather(const std::string& name, const std::vector<int64_t>& global_shape, const Job& dist,
                const std::map<int64_t, VarValues>& kept) {
  Gathered g{Tensor(DType::Float64, global_shape), ""};
  std::vector<uint8_t> filled(size_t(g.global.numel()), 0);
  double* out = g.global.data<double>();
  std::vector<int64_t> strides(global_shape.size(), 1);
  for (size_t k = global_shape.size(); k-- > 1;) strides[k - 1] = strides[k] * global_shape[k];
  for (const auto& p : dist.programs) {
    const Var* v = entryVar(*p, name);
    auto values = kept.find(p->rank);
    if (!v || values == kept.end() || !values->second.count(name)) continue;
    const Tensor& local = values->second.at(name);
    ShardLayout layout = shardLayout(*v, p->rank);
    if (layout.global_shape != global_shape)
      return {Tensor(), "rank " + std::to_string(p->rank) + "'s shard makes a global shape " + shapeText(layout.global_shape) +
                            ", the serial job's is " + shapeText(global_shape)};
    const auto& shape = local.shape();
    const double* in = local.data<double>();
    for (int64_t li = 0; li < local.numel(); ++li) {
      int64_t rem = li, gi = 0;
      for (size_t k = shape.size(); k-- > 0;) {
        gi += (rem % shape[k] + layout.offset[k]) * strides[k];
        rem /= shape[k];
      }
      double a = in[li];
      if (filled[size_t(gi)] && a != out[gi] && !(std::isnan(a) && std::isnan(out[gi])) &&
          std::fabs(a - out[gi]) > 1e-6 * std::max(1.0, std::fabs(a)))
        return {Tensor(), "replicas differ at global element " + std::to_string(gi) + " (rank " + std::to_string(p->rank) + ")"};
      out[gi] = a;
      filled[size_t(gi)] = 1;
    }
  }
  for (size_t i = 0; i < filled.size(); ++i)
    if (!filled[i]) return {Tensor(), "global element " + std::to_string(i) + " is in no rank's block"};
  return g;
}

// An input: written by no op, or only by ops that define program inputs (pd_op.data, read).
bool fedByReplay(const Var& v) {
  for (const Op* w : v.writers) {
    const OpDef* def = resolveOp(w->type).def;
    if (!def || !def->has(trait::Source)) return false;
  }
  return true;
}

// Which shard of the program's inputs (vars read before any op writes them, not parameters) a
// rank holds: ranks with equal signatures computed their loss on the same data.
std::vector<int64_t> inputShard(const Program& p) {
  std::vector<int64_t> sig;
  std::vector<const Var*> inputs;
  for (const auto& v : p.blocks[0]->vars)
    if (!v->removed && !v->persistable && !v->readers.empty() && fedByReplay(*v)) inputs.push_back(v.get());
  std::sort(inputs.begin(), inputs.end(), [](const Var* a, const Var* b) { return a->name < b->name; });
  for (const Var* v : inputs) {
    ShardLayout l = shardLayout(*v, p.rank);
    sig.insert(sig.end(), l.offset.begin(), l.offset.end());
    sig.push_back(-1);  // separates vars
  }
  return sig;
}

Tensor scalar(double v) {
  Tensor t(DType::Float64, {1});
  t.data<double>()[0] = v;
  return t;
}

}  // namespace

void checkSerialJob(const Job& serial) {
  if (serial.programs.size() != 1)
    throw InputError(serial.path, "/programs", "--serial: the serial job has " + std::to_string(serial.programs.size()) +
                                                   " programs; it must have one");
  if (serial.programs[0]->fetch.empty())
    throw InputError(serial.path, "/programs/0/fetch", "--serial: the serial job fetches no loss");
}

std::string encodeKept(const RankRun& run) {
  ojson j = ojson::object();
  for (const auto& [name, t] : run.kept) {
    ojson values = ojson::array();
    for (int64_t i = 0; i < t.numel(); ++i) values.push_back(jnum(t.valueAt(i)));
    j[name] = {{"shape", t.shape()}, {"values", std::move(values)}};
  }
  return j.dump();
}

SerialComparison compareWithSerial(const Job& serial, const RankRun& serial_run, const Job& dist,
                                   const std::map<int64_t, std::string>& dist_kept, const Tolerance& tol,
                                   LossReduce reduce, const std::string& dist_path) {
  checkSerialJob(serial);
  const Program& sp = *serial.programs[0];
  VarValues serial_values;
  for (const auto& [name, t] : serial_run.kept) serial_values.emplace(name, asFloat64(t));
  std::map<int64_t, VarValues> kept;
  for (const auto& [rank, text] : dist_kept) kept.emplace(rank, decodeKept(text));

  SerialComparison c;
  // The loss: the serial job's first fetch against the distributed jobs' first fetches, one rank
  // per distinct input shard.
  std::string loss_name(sp.fetch[0]);
  auto sl = serial_values.find(loss_name);
  if (sl == serial_values.end() || sl->second.numel() != 1)
    throw InputError(serial.path, "/programs/0/fetch/0", "--serial: the fetched loss \"" + loss_name + "\" is not one value");
  c.loss_serial = sl->second.data<double>()[0];
  std::set<std::vector<int64_t>> seen;
  for (const auto& p : dist.programs) {
    if (p->fetch.empty())
      throw InputError(dist_path, "/programs/" + std::to_string(p->rank) + "/fetch", "--serial: rank " + std::to_string(p->rank) + " fetches no loss");
    if (!seen.insert(inputShard(*p)).second) continue;
    const VarValues& values = kept.at(p->rank);
    auto l = values.find(std::string(p->fetch[0]));
    if (l == values.end() || l->second.numel() != 1)
      throw InputError(dist_path, "/programs/" + std::to_string(p->rank) + "/fetch/0",
                       "--serial: rank " + std::to_string(p->rank) + "'s fetched loss \"" + std::string(p->fetch[0]) + "\" is not one value");
    c.loss_dist += l->second.data<double>()[0];
    ++c.loss_shards;
  }
  if (reduce == LossReduce::Mean && c.loss_shards) c.loss_dist /= double(c.loss_shards);
  c.rows.push_back(compareTensors("loss (" + loss_name + ")", scalar(c.loss_serial), scalar(c.loss_dist), tol));

  // Every parameter after the step, in the serial job's declaration order.
  for (const auto& v : sp.blocks[0]->vars) {
    if (v->removed || !v->persistable) continue;
    std::string name(v->name);
    auto sv = serial_values.find(name);
    if (sv == serial_values.end()) continue;
    ++c.parameters;
    Gathered g = gather(name, sv->second.shape(), dist, kept);
    if (!g.problem.empty()) {
      c.rows.push_back({{"name", name}, {"ok", false}, {"problem", g.problem}});
      continue;
    }
    c.rows.push_back(compareTensors(name, sv->second, g.global, tol));
  }
  return c;
}

}  // namespace spopt::rt
