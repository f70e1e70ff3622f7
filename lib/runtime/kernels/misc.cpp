// fill_constant, assign, sgd, coalesce_tensor, the scheduling ops depend, nop and the stream
// synchronisations, and the py_reader objects.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "ops/shape_math.h"  // dtypeFromPaddleCode, shared with the verifier
#include "ir/json_text.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/parallel.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

// The dtype attribute: Paddle's int enum, or a name ("float32", "paddle.float32", "fp32"-style
// aliases are not guessed). Absent: the Out var's own dtype.
std::optional<DType> fillDType(const KernelContext& c) {
  const std::string_view* raw = c.op.attrs.find("dtype");
  if (!raw) return std::nullopt;
  if (auto name = stringAttrIfString(c, "dtype")) {
    std::string_view n = *name;
    if (n.substr(0, 7) == "paddle.") n.remove_prefix(7);
    if (auto t = parseDType(n)) return t;
    kernelFail(c, "dtype \"" + *name + "\" is not a known dtype");
  }
  int64_t code = intAttr(c, "dtype", 5);
  if (auto t = dtypeFromPaddleCode(code)) return t;
  kernelFail(c, "dtype " + std::to_string(code) + " is not a supported Paddle dtype code");
}

// fill_constant: Out (declared dtype and shape) = value; str_value, when non-empty, wins (it
// carries values such as "inf" or big integers exactly).
void fillConstant(KernelContext& c) {
  Tensor& out = requireOutput(c, "Out");
  if (auto t = fillDType(c); t && storageOf(*t) != out.storage())
    kernelFail(c, "dtype attribute " + std::string(dtypeName(*t)) + " disagrees with Out's " +
                      std::string(dtypeName(out.dtype())));
  bool shape_from_input = optionalInput(c, "ShapeTensor") || c.io.inputCount("ShapeTensorList") > 0;
  if (!shape_from_input && c.op.attrs.has("shape")) {
    std::vector<int64_t> shape = intsAttr(c, "shape", {});
    if (out.shape() != shape && !(shape.empty() && out.numel() == 1) && !(out.shape().empty() && shape == std::vector<int64_t>{1}))
      requireShape(c, "Out", out, shape, "the shape attribute");
  }
  double value = floatAttr(c, "value", 0.0);
  int64_t int_value = int64_t(value);
  // Paddle's program text prints str_value unquoted (str_value: 1.0): a number is taken as its text.
  const std::string_view* raw_str = c.op.attrs.find("str_value");
  std::string str = raw_str && rawToNumber(*raw_str) ? std::string(*raw_str) : stringAttr(c, "str_value", "");
  if (!str.empty()) {
    char* end = nullptr;
    value = std::strtod(str.c_str(), &end);
    if (end == str.c_str() || *end) kernelFail(c, "str_value \"" + str + "\" is not a number");
    char* iend = nullptr;
    long long iv = std::strtoll(str.c_str(), &iend, 10);
    int_value = *iend ? int64_t(value) : int64_t(iv);
  } else if (const Tensor* vt = optionalInput(c, "ValueTensor")) {
    if (vt->numel() != 1) kernelFail(c, "ValueTensor " + shapeStr(vt->shape()) + " should hold one element");
    value = scalarAt(*vt);
    int_value = int64_t(value);
  }
  int64_t n = out.numel();
  switch (out.storage()) {
    case Storage::F32: std::fill(out.data<float>(), out.data<float>() + n, float(value)); break;
    case Storage::F64: std::fill(out.data<double>(), out.data<double>() + n, value); break;
    case Storage::I64: std::fill(out.data<int64_t>(), out.data<int64_t>() + n, int_value); break;
    case Storage::U8:
      std::fill(out.data<uint8_t>(), out.data<uint8_t>() + n,
                uint8_t(out.dtype() == DType::Bool ? value != 0.0 : uint8_t(int_value)));
      break;
  }
}

void assign(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameShape(c, "Out", out, "X", x);
  copyTensor(c, x, "X", out, "Out");
}

// sgd: ParamOut = Param - LearningRate * Grad (elementwise, so ParamOut may alias Param).
void sgd(KernelContext& c) {
  const Tensor& param = requireInput(c, "Param");
  const Tensor& lr = requireInput(c, "LearningRate");
  const Tensor& grad = requireInput(c, "Grad");
  Tensor& out = requireOutput(c, "ParamOut");
  requireFloat(c, "Param", param);
  requireSameStorage(c, "Grad", grad, "Param", param);
  requireSameShape(c, "Grad", grad, "Param", param);
  requireSameStorage(c, "ParamOut", out, "Param", param);
  requireSameShape(c, "ParamOut", out, "Param", param);
  if (lr.numel() != 1) kernelFail(c, "LearningRate " + shapeStr(lr.shape()) + " should hold one element");
  double rate = scalarAt(lr);
  dispatchFloat(c, "Param", param, [&](auto tag) {
    using T = decltype(tag);
    const T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* o = out.data<T>();
    T r = T(rate);
    // A step reads and writes every parameter: shared out in fixed slices (trait::Threaded).
    parallelRanges(param.numel(), int64_t(1) << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = p[i] - r * g[i];
    });
  });
}

// depend: Out = X (the executor may give Out X's buffer; then nothing moves). Dep only orders.
void depend(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  requireSameShape(c, "Out", out, "X", x);
  copyTensor(c, x, "X", out, "Out");
}

// nop: no outputs, or Out[i] = X[i].
void nop(KernelContext& c) {
  size_t n_out = c.io.outputCount("Out");
  if (n_out && n_out != c.io.inputCount("X"))
    kernelFail(c, "has " + std::to_string(n_out) + " Out but " + std::to_string(c.io.inputCount("X")) + " X");
  for (size_t i = 0; i < n_out; ++i) {
    Tensor* out = optionalOutput(c, "Out", i);
    if (!out) continue;
    const Tensor& x = requireInput(c, "X", i);
    requireSameShape(c, "Out", *out, "X", x);
    copyTensor(c, x, "X", *out, "Out");
  }
}

// fetch: Out is X's copy. A legacy fetch writes into the program's fetch-list holder (no tensor of
// X's size): nothing to copy there, X itself is what the program's fetch list keeps.
void fetch(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor* out = optionalOutput(c, "Out");
  if (out && out->numel() == x.numel() && out->storage() == x.storage()) copyTensor(c, x, "X", *out, "Out");
}

// A value of the constant's type in t's storage.
void fillWith(Tensor& t, double value) {
  int64_t n = t.numel();
  switch (t.storage()) {
    case Storage::F32: std::fill(t.data<float>(), t.data<float>() + n, float(value)); break;
    case Storage::F64: std::fill(t.data<double>(), t.data<double>() + n, value); break;
    case Storage::I64: std::fill(t.data<int64_t>(), t.data<int64_t>() + n, int64_t(value)); break;
    case Storage::U8: std::fill(t.data<uint8_t>(), t.data<uint8_t>() + n, uint8_t(value != 0)); break;
  }
}

// coalesce_tensor: Output[i] = Input[i] (copy_data), or `constant` (set_constant), else zeros
// (Paddle leaves the fresh buffer as it is; replay needs a deterministic value). FusedOutput gets
// the Outputs one after the other when it is declared with room for them; Paddle's programs
// declare it [0] (its size is known at run time only), and then it holds nothing.
void coalesceTensor(KernelContext& c) {
  size_t n = c.io.outputCount("Output");
  if (n != c.io.inputCount("Input"))
    kernelFail(c, "has " + std::to_string(n) + " Output but " + std::to_string(c.io.inputCount("Input")) + " Input");
  bool copy = boolAttr(c, "copy_data", false), constant = boolAttr(c, "set_constant", false);
  double value = floatAttr(c, "constant", 0.0);
  Tensor& fused = requireOutput(c, "FusedOutput");
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    Tensor& out = requireOutput(c, "Output", i);
    const Tensor* in = copy ? &requireInput(c, "Input", i) : nullptr;
    if (in) {
      requireSameShape(c, "Output", out, "Input", *in);
      copyTensor(c, *in, "Input", out, "Output");
    } else {
      fillWith(out, constant ? value : 0.0);
    }
    if (out.storage() != fused.storage()) requireSameStorage(c, "Output", out, "FusedOutput", fused);
    total += out.numel();
  }
  if (fused.numel() < total) return;
  size_t esz = storageSize(fused.storage());
  auto* dst = static_cast<std::byte*>(fused.raw());
  for (size_t i = 0; i < n; ++i) {
    const Tensor& out = *optionalOutput(c, "Output", i);
    std::memcpy(dst, out.raw(), out.bytes());
    dst += size_t(out.numel()) * esz;
  }
  std::memset(dst, 0, size_t(fused.numel() - total) * esz);
}

// create_py_reader / create_double_buffer_reader: the reader object has no data; `read` is fed.
void readerObject(KernelContext&) {}

}  // namespace

void registerMiscKernels(KernelTable& t) {
  t.add("full", fillConstant);
  t.add("assign", assign);
  t.add("fetch", fetch);
  t.add("sgd", sgd);
  t.add("depend", depend);
  t.add("nop", nop);
  t.add("c_sync_calc_stream", nop);
  t.add("c_sync_comm_stream", nop);
  t.add("coalesce_tensor", coalesceTensor);
  t.add("create_py_reader", readerObject);
  t.add("create_double_buffer_reader", readerObject);
}

}  // namespace spopt::rt
