#include "runtime/inputs.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

#include "ir/json_pointer.h"
#include "support/checked_size.h"
#include "support/error.h"

namespace spopt::rt {

double elementUniform(uint64_t seed, std::string_view name, uint64_t global_index) {
  uint64_t h = splitmix64(seed ^ fnv1a64(name));
  uint64_t x = splitmix64(h + global_index);
  return double(x >> 11) * 0x1.0p-52 - 1.0;
}

ShardLayout shardLayout(const Var& var, int64_t rank) {
  ShardLayout l{var.shape, std::vector<int64_t>(var.shape.size(), 0)};
  std::vector<int64_t> mapping = var.dimsMapping();
  bool sharded = false;
  for (int64_t m : mapping) sharded |= m >= 0;
  if (!sharded) return l;
  auto fail = [&](const std::string& why) { throw InputError(var.block->program->job->path, varPointer(var) + "/dist_attr", why); };
  if (mapping.size() != var.shape.size())
    fail("dims_mapping has " + std::to_string(mapping.size()) + " entries for a tensor of rank " + std::to_string(var.shape.size()));
  std::vector<int64_t> mesh_shape, ids;
  try {
    const std::string_view* raw = var.dist_attr.find("process_mesh");
    auto mesh = nlohmann::json::parse(raw ? std::string(*raw) : std::string("null"));
    mesh_shape = mesh.at("shape").get<std::vector<int64_t>>();
    ids = mesh.at("process_ids").get<std::vector<int64_t>>();
  } catch (const std::exception&) {
    fail("a sharded var needs process_mesh.shape and process_mesh.process_ids (integer arrays)");
  }
  auto mesh_size = checkedNumel(mesh_shape);
  if (!mesh_size || *mesh_size != int64_t(ids.size()) || *mesh_size == 0) fail("process_mesh.shape does not hold process_ids.size() processes");
  int64_t index = -1;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == rank) index = int64_t(i);
  if (index < 0) fail("rank " + std::to_string(rank) + " is not in the var's process_mesh");
  std::vector<int64_t> coord(mesh_shape.size());
  for (size_t k = mesh_shape.size(); k-- > 0;) {
    coord[k] = index % mesh_shape[k];
    index /= mesh_shape[k];
  }
  for (size_t i = 0; i < mapping.size(); ++i) {
    int64_t m = mapping[i];
    if (m < 0) continue;
    if (m >= int64_t(mesh_shape.size())) fail("dims_mapping names mesh dim " + std::to_string(m) + " of a " + std::to_string(mesh_shape.size()) + "-d mesh");
    auto global = checkedMul(var.shape[i], mesh_shape[size_t(m)]);
    if (!global) fail("dim " + std::to_string(i) + " of the global shape overflows int64");
    l.global_shape[i] = *global;
    l.offset[i] = coord[size_t(m)] * var.shape[i];
  }
  if (!checkedNumel(l.global_shape)) fail("the global shape's element count overflows int64");
  return l;
}

namespace {

// Calls f(local_index, global_index) for every element, row-major.
template <typename F>
void forEachElement(const std::vector<int64_t>& local, const ShardLayout& l, F f) {
  const size_t nd = local.size();
  const int64_t n = checkedNumel(local).value_or(0);  // the tensor exists: its count fits
  if (n == 0) return;
  std::vector<int64_t> stride(nd, 1);  // global strides
  for (size_t k = nd; k-- > 1;) stride[k - 1] = stride[k] * l.global_shape[k];
  std::vector<int64_t> idx(nd, 0);
  int64_t base = 0;
  for (size_t k = 0; k < nd; ++k) base += l.offset[k] * stride[k];
  // Walk rows of the last dim: contiguous in both tensors.
  const int64_t row = nd ? local[nd - 1] : 1;
  for (int64_t li = 0; li < n; li += row) {
    int64_t g = base;
    for (size_t k = 0; k + 1 < nd; ++k) g += idx[k] * stride[k];
    for (int64_t j = 0; j < row; ++j) f(li + j, g + j);
    for (size_t k = nd ? nd - 1 : 0; k-- > 0;) {  // next row: increment the leading dims
      if (++idx[k] < local[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

Tensor fillInput(const Var& var, int64_t rank, uint64_t seed) {
  ShardLayout l = shardLayout(var, rank);
  Tensor t(var.dtype, var.shape);
  double scale = 1.0;
  if (var.persistable && !l.global_shape.empty() && l.global_shape.back() > 0) scale = 1.0 / std::sqrt(double(l.global_shape.back()));
  const uint64_t h = splitmix64(seed ^ fnv1a64(var.name));
  auto value = [&](int64_t g) { return double(splitmix64(h + uint64_t(g)) >> 11) * 0x1.0p-52 - 1.0; };
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
      forEachElement(var.shape, l, [&](int64_t i, int64_t g) { p[i] = int64_t(std::floor((value(g) + 1.0) * 4.0)); });
      break;
    }
    case Storage::U8: {
      uint8_t* p = t.data<uint8_t>();
      forEachElement(var.shape, l, [&](int64_t i, int64_t g) { p[i] = value(g) >= 0.0 ? 1 : 0; });
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
