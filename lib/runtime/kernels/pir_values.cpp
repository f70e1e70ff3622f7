// PIR's value ops: a vector of tensors (what split_with_num returns and builtin.slice indexes) and
// an IntArray constant (full_int_array). A vector var is declared as shape [k] (docs/pir.md); replay
// holds its k equal parts stacked, [k, ...part dims], so builtin.slice takes one contiguous block.
#include <cstring>

#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// split_with_num: `num` equal parts of X along `axis`, stacked in the vector.
void splitWithNum(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  if (x.shape().empty()) kernelFail(c, "X is 0-D");
  int64_t axis = normaliseAxis(c, intAttr(c, "axis", 0), x.shape().size(), "axis");
  int64_t num = intAttr(c, "num", 0), len = x.shape()[size_t(axis)];
  if (num <= 0 || len % num != 0)
    kernelFail(c, "X " + shapeStr(x.shape()) + " dim " + std::to_string(axis) + " does not split into " + std::to_string(num) + " equal parts");
  requireShape(c, "Out", out, {num}, "a vector of num parts");
  std::vector<int64_t> stacked = x.shape();
  stacked[size_t(axis)] = len / num;
  stacked.insert(stacked.begin(), num);
  out = Tensor(x.dtype(), stacked);
  int64_t outer = product(x.shape(), 0, size_t(axis)), inner = product(x.shape(), size_t(axis) + 1), part = len / num;
  size_t elem = storageSize(x.storage()), block = size_t(part * inner) * elem;
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  std::byte* dst = static_cast<std::byte*>(out.raw());
  for (int64_t p = 0; p < num && block; ++p)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + size_t(p * outer + o) * block, src + size_t((o * len + p * part) * inner) * elem, block);
}

// builtin.slice: element `index` of the vector.
void vectorSlice(KernelContext& c) {
  const Tensor& v = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  int64_t index = intAttr(c, "index", -1);
  if (v.shape().empty() || index < 0 || index >= v.shape()[0])
    kernelFail(c, "index " + std::to_string(index) + " is outside the vector " + shapeStr(v.shape()));
  requireSameStorage(c, "Out", out, "X", v);
  int64_t parts = v.shape()[0];
  if (v.numel() % parts != 0 || v.numel() / parts != out.numel())
    kernelFail(c, "Out " + shapeStr(out.shape()) + " is not an element of the vector " + shapeStr(v.shape()));
  size_t bytes = out.bytes();
  if (bytes) std::memcpy(out.raw(), static_cast<const std::byte*>(v.raw()) + size_t(index) * bytes, bytes);
}

// builtin.combine: its operands (in0, in1, ...) one after another in the vector: stacked
// [k, ...] when they are shaped alike, else flat (its readers find the parts by the operands'
// shapes, ops/vector_parts.h).
void combine(KernelContext& c) {
  const auto& slots = c.op.op().inputs;
  if (slots.empty()) kernelFail(c, "has no operands");
  const Tensor& first = requireInput(c, slots.front().name);
  Tensor& out = requireOutput(c, "Out");
  requireShape(c, "Out", out, {int64_t(slots.size())}, "a vector of its operands");
  bool equal = true;
  int64_t total = 0;
  for (const auto& s : slots) {
    const Tensor& x = requireInput(c, s.name);
    requireSameStorage(c, std::string(s.name), x, std::string(slots.front().name), first);
    equal = equal && x.shape() == first.shape();
    total += x.numel();
  }
  std::vector<int64_t> stacked = first.shape();
  stacked.insert(stacked.begin(), int64_t(slots.size()));
  out = Tensor(first.dtype(), equal ? stacked : std::vector<int64_t>{total});
  size_t at = 0;
  for (const auto& s : slots) {
    const Tensor& x = requireInput(c, s.name);
    if (x.bytes()) std::memcpy(static_cast<std::byte*>(out.raw()) + at, x.raw(), x.bytes());
    at += x.bytes();
  }
}

// builtin.split: part i of the vector into result i (out0, out1, ...).
void vectorSplit(KernelContext& c) {
  const auto& slots = c.op.op().outputs;
  size_t k = c.io.inputCount("X");
  if (slots.size() != k) kernelFail(c, "has " + std::to_string(slots.size()) + " results for a vector of " + std::to_string(k));
  for (size_t i = 0; i < k; ++i) {
    const Tensor& part = requireInput(c, "X", i);
    std::string name(slots[i].name);
    Tensor& out = requireOutput(c, name);
    requireSameShape(c, name, out, "X", part);
    copyTensor(c, part, "X", out, name);
  }
}

// full_int_array: Out = the `value` list.
void fullIntArray(KernelContext& c) {
  Tensor& out = requireOutput(c, "Out");
  std::vector<int64_t> value = intsAttr(c, "value", {});
  if (out.numel() != int64_t(value.size()))
    kernelFail(c, "Out " + shapeStr(out.shape()) + " does not hold the " + std::to_string(value.size()) + " values");
  for (size_t i = 0; i < value.size(); ++i) {
    switch (out.storage()) {
      case Storage::I64: out.data<int64_t>()[i] = value[i]; break;
      case Storage::F32: out.data<float>()[i] = float(value[i]); break;
      case Storage::F64: out.data<double>()[i] = double(value[i]); break;
      case Storage::U8: out.data<uint8_t>()[i] = uint8_t(value[i]); break;
    }
  }
}

}  // namespace

void registerPirValueKernels(KernelTable& t) {
  t.add("split_with_num", splitWithNum);
  t.add("vector_slice", vectorSlice);
  t.add("full_int_array", fullIntArray);
  t.add("combine", combine);
  t.add("vector_split", vectorSplit);
}

}  // namespace spopt::rt
