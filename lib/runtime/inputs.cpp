#include "runtime/inputs.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_set>
#include <vector>

#include "ir/json_pointer.h"
#include "ops/op_view.h"
#include "runtime/kernels/parallel.h"
#include "support/checked_size.h"
#include "verify/sharding.h"
#include "support/error.h"

namespace spopt::rt {

double elementUniform(uint64_t seed, std::string_view name, uint64_t global_index) {
  uint64_t h = splitmix64(seed ^ fnv1a64(name));
  uint64_t x = splitmix64(h + global_index);
  return double(x >> 11) * 0x1.0p-52 - 1.0;
}

ShardLayout shardLayout(const Var& var, int64_t rank) {
  ShardLayout l{var.shape, std::vector<int64_t>(var.shape.size(), 0)};
  auto fail = [&](const std::string& why) { throw InputError(var.block->program->job->path, varPointer(var) + "/dist_attr", why); };
  // The verifier checked the same parse (verify/sharding.h); a pass-made var may not have been.
  std::string problem;
  auto sharding = varSharding(var, &problem);
  if (!problem.empty()) fail(problem);
  if (!sharding) return l;
  const std::vector<int64_t>& mapping = sharding->mapping;
  const std::vector<int64_t>& mesh_shape = sharding->mesh_shape;
  const std::vector<int64_t>& ids = sharding->process_ids;
  int64_t index = -1;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == rank) index = int64_t(i);
  if (index < 0) fail("rank " + std::to_string(rank) + " is not in the var's process_mesh");
  std::vector<int64_t> coord(mesh_shape.size());
  for (size_t k = mesh_shape.size(); k-- > 0;) {
    coord[k] = index % mesh_shape[k];
    index /= mesh_shape[k];
  }
  l.global_shape = sharding->global_shape;
  for (size_t i = 0; i < mapping.size(); ++i)
    if (mapping[i] >= 0) l.offset[i] = coord[size_t(mapping[i])] * var.shape[i];
  return l;
}

namespace {

// Calls f(local_index, global_index) for every element, row-major within a share of the rows;
// the shares run on up to gemmWidth() threads (each element's value depends on its index alone,
// so the result does not depend on the split: a GPT replay's parameters took a tenth of its time
// on one thread).
template <typename F>
void forEachElement(const std::vector<int64_t>& local, const ShardLayout& l, F f) {
  const size_t nd = local.size();
  const int64_t n = checkedNumel(local).value_or(0);  // the tensor exists: its count fits
  if (n == 0) return;
  std::vector<int64_t> stride(nd, 1);  // global strides
  for (size_t k = nd; k-- > 1;) stride[k - 1] = stride[k] * l.global_shape[k];
  int64_t base = 0;
  for (size_t k = 0; k < nd; ++k) base += l.offset[k] * stride[k];
  // Walk rows of the last dim: contiguous in both tensors.
  const int64_t row = nd ? local[nd - 1] : 1, rows = n / row;
  constexpr int64_t kShare = int64_t(1) << 16;  // elements per share, at least a row
  parallelRanges(rows, std::max<int64_t>(1, kShare / row), [&](int64_t first, int64_t last) {
    std::vector<int64_t> idx(nd, 0);  // the leading dims of row `first`
    for (int64_t r = first, k = int64_t(nd) - 1; k-- > 0;) {
      idx[size_t(k)] = r % local[size_t(k)];
      r /= local[size_t(k)];
    }
    for (int64_t r = first; r < last; ++r) {
      int64_t g = base;
      for (size_t k = 0; k + 1 < nd; ++k) g += idx[k] * stride[k];
      for (int64_t j = 0; j < row; ++j) f(r * row + j, g + j);
      for (size_t k = nd ? nd - 1 : 0; k-- > 0;) {  // next row: increment the leading dims
        if (++idx[k] < local[k]) break;
        idx[k] = 0;
      }
    }
  });
}

}  // namespace

namespace {

// The index bounds readers put on a var: firm ones (a table's dim, a shard op's global vocab) and
// the shard dim of a shard op that does not say its global vocab (c_embedding_grad has no
// vocab_size), which counts only when no reader is firm.
struct Bounds {
  std::optional<int64_t> firm, shard;
  static void lower(std::optional<int64_t>& b, int64_t v) { b = b ? std::min(*b, v) : v; }
};

// Views pass their values on: a read of a View op's result is a read of its input. A View op with
// as many results as inputs (c_sync_calc_stream over a list of gradients) views them pairwise,
// Out[i] being X[i]; otherwise every result views the input. Breadth-first with a visited set:
// a stream sync that lists 100 vars would otherwise send the walk through every pair of them.
// Depth-bounded too (a chain of views is short; the bound only guards against a malformed graph).
void collectDomain(const Var& root, ValueDomain& d, Bounds& bounds) {
  std::vector<std::pair<const Var*, int>> queue{{&root, 0}};
  std::unordered_set<const Var*> seen{&root};
  for (size_t q = 0; q < queue.size(); ++q) {
    auto [var, depth] = queue[q];
    for (const Op* reader : var->readers) {
      OpView view(*reader);
      if (!view.known()) continue;
      int64_t position = -1;  // the var's index in the (last) input slot that reads it, and that slot's size
      size_t read_count = 0;
      for (const Slot& slot : reader->inputs) {
        const OperandDef* o = view.inputOfSlot(slot.name);
        if (!o) continue;
        bool reads_var = false;
        for (size_t i = 0; i < slot.args.size(); ++i)
          if (slot.args[i].var == var) {
            reads_var = true;
            position = int64_t(i);
            read_count = slot.args.size();
          }
        if (!reads_var) continue;
        d.non_negative |= o->non_negative;
        if (o->rotary != RotaryTable::None) {
          d.rotary = o->rotary;
          d.rotary_neighbours = view.attrs.getBool("use_neox_rotary_style").value_or(true);
          d.rotary_base = view.attrs.getNumber("rotary_emb_base").value_or(10000.0);
        }
        if (o->index_of.empty()) continue;
        const Var* table = view.in(o->index_of);
        if (!table || table->shape.empty()) continue;
        int64_t dim = o->index_dim < 0 ? int64_t(table->shape.size()) + o->index_dim : o->index_dim;
        if (dim < 0 || dim >= int64_t(table->shape.size()) || table->shape[size_t(dim)] <= 0) continue;
        int64_t bound = table->shape[size_t(dim)];
        if (!o->index_bound) Bounds::lower(bounds.firm, bound);
        else if (auto b = o->index_bound(view); b && *b > 0) Bounds::lower(bounds.firm, *b);
        else Bounds::lower(bounds.shard, bound);
      }
      if (!view.has(trait::View) || depth >= 8) continue;
      for (const Slot& slot : reader->outputs) {
        const OperandDef* o = view.outputOfSlot(slot.name);
        if (!o || !o->reads_buffer) continue;
        bool pairwise = slot.args.size() > 1 && slot.args.size() == read_count;
        for (size_t i = 0; i < slot.args.size(); ++i) {
          const Var* next = slot.args[i].var;
          if (!next || (pairwise && int64_t(i) != position) || !seen.insert(next).second) continue;
          queue.push_back({next, depth + 1});
        }
      }
    }
  }
}

// Element g of a rotary table `width` wide (THE RULE, inputs.h).
double rotaryValue(const ValueDomain& d, int64_t width, int64_t g) {
  const int64_t position = g / width, column = g % width;
  const int64_t j = d.rotary_neighbours ? column / 2 : column % std::max<int64_t>(width / 2, 1);
  const double theta = double(position) * std::pow(d.rotary_base, -2.0 * double(j) / double(width));
  return d.rotary == RotaryTable::Sin ? std::sin(theta) : std::cos(theta);
}

}  // namespace

ValueDomain valueDomain(const Var& var) {
  ValueDomain d;
  Bounds bounds;
  collectDomain(var, d, bounds);
  if (auto b = bounds.firm ? bounds.firm : bounds.shard) d.index_bound = *b;
  return d;
}

Tensor fillInput(const Var& var, int64_t rank, uint64_t seed) {
  ShardLayout l = shardLayout(var, rank);
  const ValueDomain domain = valueDomain(var);
  Tensor t(var.dtype, var.shape);
  double scale = 1.0;
  if (var.persistable && domain.rotary == RotaryTable::None && !l.global_shape.empty() && l.global_shape.back() > 0)
    scale = 1.0 / std::sqrt(double(l.global_shape.back()));
  const uint64_t h = splitmix64(seed ^ fnv1a64(var.name));
  auto uniform = [&](int64_t g) { return double(splitmix64(h + uint64_t(g)) >> 11) * 0x1.0p-52 - 1.0; };
  const int64_t table_width = l.global_shape.empty() ? 0 : l.global_shape.back();
  auto value = [&](int64_t g) {
    if (domain.rotary != RotaryTable::None && table_width > 0) return rotaryValue(domain, table_width, g);
    return domain.non_negative ? std::fabs(uniform(g)) : uniform(g);
  };
  auto index = [&](int64_t g) { return int64_t(std::floor((uniform(g) + 1.0) * (double(domain.index_bound) / 2.0))); };
  switch (t.storage()) {
    case Storage::F32: {
      float* p = t.data<float>();
      forEachElement(var.shape, l, [&](int64_t i, int64_t g) { p[i] = float(value(g) * scale); });
      break;
    }
    case Storage::F64: {
      double* p = t.data<double>();
      forEachElement(var.shape, l, [&](int64_t i, int64_t g) { p[i] = value(g) * scale; });
      break;
    }
    case Storage::I64: {
      int64_t* p = t.data<int64_t>();
      forEachElement(var.shape, l, [&](int64_t i, int64_t g) { p[i] = index(g); });
      break;
    }
    case Storage::U8: {
      uint8_t* p = t.data<uint8_t>();
      forEachElement(var.shape, l, [&](int64_t i, int64_t g) { p[i] = uniform(g) >= 0.0 ? 1 : 0; });
      break;
    }
  }
  return t;
}

namespace {
}  // namespace

Tensor sliceGlobal(const Tensor& global, const ShardLayout& layout, const std::vector<int64_t>& local_shape, DType dtype) {
  Tensor t(dtype, local_shape);
  const bool same = t.storage() == global.storage();
  const size_t esz = storageSize(t.storage());
  auto* dst = static_cast<std::byte*>(t.raw());
  const auto* src = static_cast<const std::byte*>(global.raw());
  forEachElement(local_shape, layout, [&](int64_t i, int64_t g) {
    if (same) {
      std::memcpy(dst + size_t(i) * esz, src + size_t(g) * esz, esz);
      return;
    }
    double v = global.valueAt(g);
    switch (t.storage()) {
      case Storage::F32: t.data<float>()[i] = float(v); break;
      case Storage::F64: t.data<double>()[i] = v; break;
      case Storage::I64: t.data<int64_t>()[i] = int64_t(v); break;
      case Storage::U8: t.data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
    }
  });
  return t;
}

}  // namespace spopt::rt
