#include "runtime/kernels/kernel_util.h"

#include <cmath>
#include <cstring>

#include "ir/json_text.h"

namespace spopt::rt {

void kernelFail(const KernelContext& c, const std::string& message) {
  throw KernelError(std::string(c.op.type) + ": " + message);
}

const Tensor* optionalInput(const KernelContext& c, std::string_view slot, size_t i) {
  return c.io.input(slot, i);
}
Tensor* optionalOutput(const KernelContext& c, std::string_view slot, size_t i) {
  return c.io.output(slot, i);
}
const Tensor& requireInput(const KernelContext& c, std::string_view slot, size_t i) {
  const Tensor* t = c.io.input(slot, i);
  if (!t) kernelFail(c, "missing input " + std::string(slot) + (i ? "[" + std::to_string(i) + "]" : ""));
  return *t;
}
Tensor& requireOutput(const KernelContext& c, std::string_view slot, size_t i) {
  Tensor* t = c.io.output(slot, i);
  if (!t) kernelFail(c, "missing output " + std::string(slot) + (i ? "[" + std::to_string(i) + "]" : ""));
  return *t;
}

int64_t intAttr(const KernelContext& c, std::string_view key, int64_t def) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw) return def;
  if (auto v = rawToIntLenient(*raw)) return *v;
  kernelFail(c, "attribute " + std::string(key) + " is not an integer: " + std::string(*raw));
}

double floatAttr(const KernelContext& c, std::string_view key, double def) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw) return def;
  if (auto v = rawToNumber(*raw)) return *v;
  kernelFail(c, "attribute " + std::string(key) + " is not a number: " + std::string(*raw));
}

bool boolAttr(const KernelContext& c, std::string_view key, bool def) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw) return def;
  if (auto b = rawToBoolLenient(*raw)) return *b;
  kernelFail(c, "attribute " + std::string(key) + " is not a boolean: " + std::string(*raw));
}

std::string stringAttr(const KernelContext& c, std::string_view key, std::string def) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw) return def;
  if (auto s = rawToString(*raw)) return *s;
  kernelFail(c, "attribute " + std::string(key) + " is not a string: " + std::string(*raw));
}

std::optional<std::string> stringAttrIfString(const KernelContext& c, std::string_view key) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw || !rawIsString(*raw)) return std::nullopt;
  return rawToString(*raw);
}

std::vector<int64_t> intsAttr(const KernelContext& c, std::string_view key, std::vector<int64_t> def) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw) return def;
  if (auto v = rawToIntsLenient(*raw)) return *v;
  kernelFail(c, "attribute " + std::string(key) + " is not a list of integers: " + std::string(*raw));
}

std::vector<double> numbersAttr(const KernelContext& c, std::string_view key) {
  const std::string_view* raw = c.op.attrs.find(key);
  if (!raw) return {};
  if (auto v = rawToNumberArray(*raw)) return *v;
  kernelFail(c, "attribute " + std::string(key) + " is not a list of numbers: " + std::string(*raw));
}

std::string shapeStr(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < dims.size() && i < end; ++i) p *= dims[i];
  return p;
}

int64_t normaliseAxis(const KernelContext& c, int64_t axis, size_t rank, std::string_view what) {
  int64_t r = int64_t(rank);
  int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    kernelFail(c, std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                      std::to_string(rank));
  return a;
}

void requireShape(const KernelContext& c, std::string_view name, const Tensor& t,
                  const std::vector<int64_t>& expected, std::string_view why) {
  if (t.shape() != expected)
    kernelFail(c, std::string(name) + " " + shapeStr(t.shape()) + " should be " + shapeStr(expected) +
                      (why.empty() ? "" : " (" + std::string(why) + ")"));
}

void requireSameShape(const KernelContext& c, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b) {
  if (a.shape() != b.shape())
    kernelFail(c, std::string(a_name) + " " + shapeStr(a.shape()) + " differs from " + std::string(b_name) +
                      " " + shapeStr(b.shape()));
}

void requireGradLike(const KernelContext& c, std::string_view grad_name, const Tensor* grad, std::string_view name,
                     const Tensor& of) {
  if (!grad) return;
  requireSameStorage(c, grad_name, *grad, name, of);
  requireShape(c, grad_name, *grad, of.shape(), std::string(name) + "'s shape");
}

void requireOperandGrads(const KernelContext& c, const Tensor& x, const Tensor& y, const Tensor* dx, const Tensor* dy) {
  requireGradLike(c, "X@GRAD", dx, "X", x);
  requireGradLike(c, "Y@GRAD", dy, "Y", y);
}

void requireSameStorage(const KernelContext& c, std::string_view a_name, const Tensor& a,
                        std::string_view b_name, const Tensor& b) {
  if (a.storage() != b.storage())
    kernelFail(c, std::string(a_name) + " is " + std::string(dtypeName(a.dtype())) + " but " +
                      std::string(b_name) + " is " + std::string(dtypeName(b.dtype())));
}

void requireFloat(const KernelContext& c, std::string_view name, const Tensor& t) {
  if (t.storage() != Storage::F32 && t.storage() != Storage::F64)
    kernelFail(c, std::string(name) + " is " + std::string(dtypeName(t.dtype())) + ", not a floating type");
}

void copyTensor(const KernelContext& c, const Tensor& from, std::string_view from_name, Tensor& to,
                std::string_view to_name) {
  requireSameStorage(c, to_name, to, from_name, from);
  if (to.numel() != from.numel())
    kernelFail(c, std::string(to_name) + " " + shapeStr(to.shape()) + " and " + std::string(from_name) + " " +
                      shapeStr(from.shape()) + " have different element counts");
  if (to.raw() != from.raw() && from.bytes()) std::memcpy(to.raw(), from.raw(), from.bytes());
}

void shareTensor(const KernelContext& c, const Tensor& from, std::string_view from_name, Tensor& to, std::string_view to_name) {
  if (from.dtype() != to.dtype() || from.empty()) return copyTensor(c, from, from_name, to, to_name);
  requireSameStorage(c, to_name, to, from_name, from);
  if (to.numel() != from.numel())
    kernelFail(c, std::string(to_name) + " " + shapeStr(to.shape()) + " and " + std::string(from_name) + " " +
                      shapeStr(from.shape()) + " have different element counts");
  to = from.view(to.shape());
}

}  // namespace spopt::rt
