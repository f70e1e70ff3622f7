// Device data movement and the rest: assign/depend/nop, fill_constant, sum, reshape2, transpose2,
// split, concat, sgd.
#include <cstring>
#include <optional>

#include "runtime/nccl/device_op_util.h"

namespace spopt::rt::device_ops {
namespace {

// ---- data movement and the rest ----

bool assignLike(DeviceOpContext& c) {  // assign, depend: Out = X
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  sameShape(c, "Out", o, "X", x);
  sameStorage(c, "Out", o, "X", x);
  copyDev(c, x, o);
  return true;
}

bool nop(DeviceOpContext& c) {
  size_t n_out = c.io.outputCount("Out");
  if (n_out && n_out != c.io.inputCount("X"))
    kernelFail(c.host, "has " + std::to_string(n_out) + " Out but " + std::to_string(c.io.inputCount("X")) + " X");
  for (size_t i = 0; i < n_out; ++i) {
    DevTensor* o = c.io.output("Out", i);
    if (!o) continue;
    const DevTensor& x = in(c, "X", i);
    sameShape(c, "Out", *o, "X", x);
    copyDev(c, x, *o);
  }
  return true;
}

// The dtype attribute's storage when it is one this device path knows (Paddle codes float32 5,
// float64 6, int32 2, int64 3, bool 0, or a dtype name).
std::optional<Storage> fillStorage(DeviceOpContext& c) {
  if (auto name = stringAttrIfString(c.host, "dtype")) {
    std::string_view n = *name;
    if (n.substr(0, 7) == "paddle.") n.remove_prefix(7);
    if (auto t = parseDType(n)) return storageOf(*t);
    return std::nullopt;
  }
  switch (intAttr(c.host, "dtype", 5)) {
    case 5: return Storage::F32;
    case 6: return Storage::F64;
    case 2:
    case 3: return Storage::I64;
    case 0: return Storage::U8;
    default: return std::nullopt;
  }
}

// Values and shapes from tensors, str_value, or a dtype that disagrees with Out: the CPU kernel
// handles those (and reports the errors).
bool fillConstant(DeviceOpContext& c) {
  if (c.io.input("ValueTensor") || c.io.input("ShapeTensor") || c.io.inputCount("ShapeTensorList") ||
      !stringAttr(c.host, "str_value", "").empty())
    return false;
  DevTensor& o = out(c, "Out");
  if (c.host.op.attrs.has("dtype")) {
    auto st = fillStorage(c);
    if (!st || *st != o.storage()) return false;
  }
  if (c.host.op.attrs.has("shape")) {
    Dims shape = intsAttr(c.host, "shape", {});
    if (o.shape != shape && !(shape.empty() && o.numel == 1) && !(o.shape.empty() && shape == Dims{1}))
      kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(shape) + " (the shape attribute)");
  }
  double v = floatAttr(c.host, "value", 0.0);
  switch (o.storage()) {
    case Storage::F32: cuda::fill<float>(o.data<float>(), o.numel, float(v), c.stream); break;
    case Storage::F64: cuda::fill<double>(o.data<double>(), o.numel, v, c.stream); break;
    case Storage::I64: cuda::fill<int64_t>(o.data<int64_t>(), o.numel, int64_t(v), c.stream); break;
    case Storage::U8:
      cuda::fill<uint8_t>(o.data<uint8_t>(), o.numel, uint8_t(o.dtype == DType::Bool ? v != 0.0 : uint8_t(int64_t(v))), c.stream);
      break;
  }
  return true;
}

// sum: Out = X[0] + X[1] + ... in input order, in double (as the CPU kernel).
bool sum(DeviceOpContext& c) {
  size_t n = c.io.inputCount("X");
  if (n == 0) kernelFail(c.host, "has no X");
  if (n > size_t(cuda::kMaxSumInputs)) return false;
  DevTensor& o = out(c, "Out");
  requireFloatDev(c, "Out", o);
  for (size_t i = 0; i < n; ++i) {
    const DevTensor& xi = in(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    sameStorage(c, name, xi, "Out", o);
    sameShape(c, name, xi, "Out", o);
  }
  byFloat(o, [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> xs;
    for (size_t i = 0; i < n; ++i) xs.push_back(in(c, "X", i).data<T>());
    cuda::sumInputs<T>(xs.data(), int(n), o.data<T>(), o.numel, c.stream);
  });
  return true;
}

bool reshape2(DeviceOpContext& c) {
  if (c.io.input("Shape")) return false;
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  if (o.numel != x.numel) kernelFail(c.host, "Out " + shapeStr(o.shape) + " does not hold the elements of X " + shapeStr(x.shape));
  sameStorage(c, "Out", o, "X", x);
  copyDev(c, x, o);
  return true;
}
bool reshape2Grad(DeviceOpContext& c) {
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  if (dx.numel != g.numel) kernelFail(c.host, "X@GRAD " + shapeStr(dx.shape) + " and Out@GRAD " + shapeStr(g.shape) + " differ in size");
  sameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  copyDev(c, g, dx);
  return true;
}

// The permutation `axis` names; nullopt past kMaxDims dims, where the op runs on the CPU kernel.
std::optional<std::vector<int>> permFromAxis(DeviceOpContext& c, size_t rank) {
  if (rank > size_t(cuda::kMaxDims)) return std::nullopt;
  Dims axis = intsAttr(c.host, "axis", {});
  if (axis.size() != rank) kernelFail(c.host, "axis " + shapeStr(axis) + " is not a permutation of " + std::to_string(rank) + " dims");
  std::vector<int> perm(rank);
  std::vector<char> seen(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = axis[i] < 0 ? axis[i] + int64_t(rank) : axis[i];
    if (a < 0 || a >= int64_t(rank) || seen[size_t(a)]) kernelFail(c.host, "axis " + shapeStr(axis) + " is not a permutation");
    seen[size_t(a)] = 1;
    perm[i] = int(a);
  }
  return perm;
}

bool transpose2(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  DevTensor& o = out(c, "Out");
  sameStorage(c, "Out", o, "X", x);
  auto axis_perm = permFromAxis(c, x.shape.size());
  if (!axis_perm) return false;
  const std::vector<int>& perm = *axis_perm;
  Dims want(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) want[i] = x.shape[size_t(perm[i])];
  if (o.shape != want) kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(want) + " (X transposed by axis)");
  cuda::permute(x.buf.get(), o.buf.get(), int(perm.size()), x.shape.data(), perm.data(), x.numel, int(storageSize(x.storage())), c.stream);
  return true;
}
bool transpose2Grad(DeviceOpContext& c) {
  const DevTensor& g = in(c, "Out@GRAD");
  DevTensor& dx = out(c, "X@GRAD");
  sameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  auto axis_perm = permFromAxis(c, dx.shape.size());
  if (!axis_perm) return false;
  const std::vector<int>& perm = *axis_perm;
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int(i);
  Dims gshape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) gshape[i] = dx.shape[size_t(perm[i])];
  if (g.shape != gshape) kernelFail(c.host, "Out@GRAD " + shapeStr(g.shape) + " differs from " + shapeStr(gshape) + " (X transposed by axis)");
  cuda::permute(g.buf.get(), dx.buf.get(), int(perm.size()), g.shape.data(), inverse.data(), g.numel, int(storageSize(g.storage())), c.stream);
  return true;
}

// split / concat: each part is a strided block copy (outer rows of part * inner elements).
void copyBlock(DeviceOpContext& c, void* dst, size_t dst_row, const void* src, size_t src_row, size_t width, int64_t rows) {
  if (width && rows)
    cudaCheck(cudaMemcpy2DAsync(dst, dst_row, src, src_row, width, size_t(rows), cudaMemcpyDeviceToDevice, c.stream), "cudaMemcpy2DAsync");
}

bool split(DeviceOpContext& c) {
  const DevTensor& x = in(c, "X");
  size_t n_out = c.io.outputCount("Out");
  if (n_out == 0) kernelFail(c.host, "has no Out");
  if (x.shape.empty()) kernelFail(c.host, "X is 0-D");
  int64_t axis = normaliseAxis(c.host, intAttr(c.host, "axis", 0), x.shape.size(), "axis");
  int64_t len = x.shape[size_t(axis)], num = intAttr(c.host, "num", 0);
  Dims sections = intsAttr(c.host, "sections", {});
  if (num > 0) {
    if (len % num != 0) kernelFail(c.host, "X " + shapeStr(x.shape) + " dim " + std::to_string(axis) + " does not split into " + std::to_string(num) + " equal parts");
    sections.assign(size_t(num), len / num);
  } else {
    int64_t known = 0, infer = -1;
    for (size_t i = 0; i < sections.size(); ++i) {
      if (sections[i] == -1 && infer < 0) infer = int64_t(i);
      else if (sections[i] < 0) kernelFail(c.host, "sections " + shapeStr(sections) + " has more than one -1 or a negative size");
      else known += sections[i];
    }
    if (infer >= 0) sections[size_t(infer)] = len - known;
    int64_t total = 0;
    for (int64_t v : sections) total += v;
    if (sections.empty() || total != len || (infer >= 0 && sections[size_t(infer)] < 0))
      kernelFail(c.host, "sections " + shapeStr(intsAttr(c.host, "sections", {})) + " do not add up to dim " + std::to_string(axis) + " of X " + shapeStr(x.shape));
  }
  if (sections.size() != n_out)
    kernelFail(c.host, "splits X into " + std::to_string(sections.size()) + " parts but has " + std::to_string(n_out) + " Out");
  int64_t outer = product(x.shape, 0, size_t(axis)), inner = product(x.shape, size_t(axis) + 1);
  size_t elem = storageSize(x.storage());
  int64_t start = 0;
  for (size_t i = 0; i < n_out; ++i) {
    DevTensor* o = c.io.output("Out", i);
    int64_t part = sections[i];
    if (o) {
      std::string name = "Out[" + std::to_string(i) + "]";
      sameStorage(c, name, *o, "X", x);
      Dims want = x.shape;
      want[size_t(axis)] = part;
      if (o->shape != want) kernelFail(c.host, name + " " + shapeStr(o->shape) + " differs from " + shapeStr(want) + " (a part of X)");
      copyBlock(c, o->buf.get(), size_t(part * inner) * elem, static_cast<const std::byte*>(x.buf.get()) + size_t(start * inner) * elem,
                size_t(len * inner) * elem, size_t(part * inner) * elem, outer);
    }
    start += part;
  }
  return true;
}

bool concat(DeviceOpContext& c) {
  size_t n_in = c.io.inputCount("X");
  if (n_in == 0) kernelFail(c.host, "has no X");
  DevTensor& o = out(c, "Out");
  const DevTensor& x0 = in(c, "X", 0);
  if (x0.shape.empty()) kernelFail(c.host, "X[0] is 0-D");
  int64_t axis = normaliseAxis(c.host, intAttr(c.host, "axis", 0), x0.shape.size(), "axis");
  Dims want = x0.shape;
  want[size_t(axis)] = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const DevTensor& xi = in(c, "X", i);
    std::string name = "X[" + std::to_string(i) + "]";
    sameStorage(c, name, xi, "Out", o);
    Dims a = xi.shape, b = x0.shape;
    if (a.size() != b.size()) kernelFail(c.host, name + " " + shapeStr(a) + " and X[0] " + shapeStr(b) + " differ in rank");
    a[size_t(axis)] = b[size_t(axis)] = 0;
    if (a != b) kernelFail(c.host, name + " " + shapeStr(xi.shape) + " and X[0] " + shapeStr(x0.shape) + " differ outside axis " + std::to_string(axis));
    want[size_t(axis)] += xi.shape[size_t(axis)];
  }
  if (o.shape != want) kernelFail(c.host, "Out " + shapeStr(o.shape) + " differs from " + shapeStr(want) + " (X joined along axis)");
  int64_t outer = product(want, 0, size_t(axis)), inner = product(want, size_t(axis) + 1);
  size_t elem = storageSize(o.storage()), out_row = size_t(want[size_t(axis)] * inner) * elem, start = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const DevTensor& xi = in(c, "X", i);
    size_t block = size_t(xi.shape[size_t(axis)] * inner) * elem;
    copyBlock(c, static_cast<std::byte*>(o.buf.get()) + start, out_row, xi.buf.get(), block, block, outer);
    start += block;
  }
  return true;
}

bool sgd(DeviceOpContext& c) {
  const DevTensor& param = in(c, "Param");
  const DevTensor& lr = in(c, "LearningRate");
  const DevTensor& grad = in(c, "Grad");
  DevTensor& o = out(c, "ParamOut");
  requireFloatDev(c, "Param", param);
  likeInput(c, "Param", param, "Grad", grad);
  likeInput(c, "Param", param, "ParamOut", o);
  if (lr.numel != 1) kernelFail(c.host, "LearningRate " + shapeStr(lr.shape) + " should hold one element");
  // The rate is one device scalar: read it back (a sync; sgd runs once per parameter per step).
  double rate = 0;
  if (lr.storage() == Storage::F32 || lr.storage() == Storage::F64 || lr.storage() == Storage::I64) {
    unsigned char raw[8] = {};
    cudaCheck(cudaMemcpyAsync(raw, lr.buf.get(), lr.bytes(), cudaMemcpyDeviceToHost, c.stream), "cudaMemcpyAsync");
    cudaCheck(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
    if (lr.storage() == Storage::F32) { float f; std::memcpy(&f, raw, 4); rate = f; }
    else if (lr.storage() == Storage::F64) std::memcpy(&rate, raw, 8);
    else { int64_t i; std::memcpy(&i, raw, 8); rate = double(i); }
  } else {
    return false;
  }
  byFloat(param, [&](auto tag) {
    using T = decltype(tag);
    cuda::axpyFrom<T>(param.data<T>(), grad.data<T>(), o.data<T>(), param.numel, T(rate), c.stream);
  });
  return true;
}

}  // namespace

void registerMovementOps(DeviceOpTable& t) {
  t.emplace("assign", assignLike);
  t.emplace("depend", assignLike);
  t.emplace("nop", nop);
  t.emplace("full", fillConstant);
  t.emplace("add_n", sum);
  t.emplace("reshape", reshape2);
  t.emplace("reshape_grad", reshape2Grad);
  t.emplace("split", split);
  t.emplace("concat", concat);
  t.emplace("transpose", transpose2);
  t.emplace("transpose_grad", transpose2Grad);
  t.emplace("sgd", sgd);
}

}  // namespace spopt::rt::device_ops
