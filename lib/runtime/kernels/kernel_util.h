#pragma once
// Helpers shared by the kernel families: slot access that throws KernelError naming the op,
// attribute readers with Paddle's defaults, shape formatting and float dtype dispatch.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/kernels/kernels.h"

namespace spopt::rt {

[[noreturn]] void kernelFail(const KernelContext& c, const std::string& message);

// Required slots throw "OP: missing input X"; optional ones give nullptr.
const Tensor& requireInput(const KernelContext& c, std::string_view slot, size_t i = 0);
Tensor& requireOutput(const KernelContext& c, std::string_view slot, size_t i = 0);
const Tensor* optionalInput(const KernelContext& c, std::string_view slot, size_t i = 0);
Tensor* optionalOutput(const KernelContext& c, std::string_view slot, size_t i = 0);

// Attributes. Booleans accept true/false and 0/1; ints accept integral numbers; an int list
// also accepts a single int. A present attribute of the wrong JSON type is a KernelError.
int64_t intAttr(const KernelContext& c, std::string_view key, int64_t def);
double floatAttr(const KernelContext& c, std::string_view key, double def);
bool boolAttr(const KernelContext& c, std::string_view key, bool def);
std::string stringAttr(const KernelContext& c, std::string_view key, std::string def);
// The attribute's text when it is a JSON string, else nullopt (for attrs that may be int or name).
std::optional<std::string> stringAttrIfString(const KernelContext& c, std::string_view key);
std::vector<int64_t> intsAttr(const KernelContext& c, std::string_view key, std::vector<int64_t> def);
std::vector<double> numbersAttr(const KernelContext& c, std::string_view key);  // absent: empty

std::string shapeStr(const std::vector<int64_t>& shape);  // "[4,3]"
int64_t product(const std::vector<int64_t>& dims, size_t begin = 0, size_t end = SIZE_MAX);
// Normalises a possibly negative axis for a rank-`rank` tensor, or fails naming the attribute.
int64_t normaliseAxis(const KernelContext& c, int64_t axis, size_t rank, std::string_view what);

// Shape and dtype checks with messages such as "relu: Out [2,3] differs from X [3,2]".
void requireShape(const KernelContext& c, std::string_view name, const Tensor& t,
                  const std::vector<int64_t>& expected, std::string_view why);
void requireSameShape(const KernelContext& c, std::string_view a_name, const Tensor& a,
                      std::string_view b_name, const Tensor& b);
// An optional gradient output (null: not asked for) is stored and shaped like the input it is the
// gradient of, e.g. requireGradLike(c, "Filter@GRAD", df, "Filter", f).
void requireGradLike(const KernelContext& c, std::string_view grad_name, const Tensor* grad, std::string_view name,
                     const Tensor& of);
// X@GRAD and Y@GRAD of a binary op, each when asked for, are shaped and stored like X and Y.
void requireOperandGrads(const KernelContext& c, const Tensor& x, const Tensor& y, const Tensor* dx, const Tensor* dy);
void requireSameStorage(const KernelContext& c, std::string_view a_name, const Tensor& a,
                        std::string_view b_name, const Tensor& b);
void requireFloat(const KernelContext& c, std::string_view name, const Tensor& t);

// `to` becomes a view of `from`'s bytes under its own shape (reshape, squeeze, unsqueeze move no
// bytes; Values never write a buffer in place, fused_views.cpp copies a shared one first); a copy
// when the dtypes differ (a float32 buffer under a float16 var would be rounded in place).
void shareTensor(const KernelContext& c, const Tensor& from, std::string_view from_name, Tensor& to, std::string_view to_name);
// Byte copy between tensors of equal storage and numel (a no-op when they share a buffer).
void copyTensor(const KernelContext& c, const Tensor& from, std::string_view from_name, Tensor& to,
                std::string_view to_name);

// Element i of a floating or integer tensor as a double (for scalars such as a learning rate).
inline double scalarAt(const Tensor& t, int64_t i = 0) { return t.valueAt(i); }

// Calls f(float{}) or f(double{}) by the storage of a floating tensor.
template <typename F>
void dispatchFloat(const KernelContext& c, std::string_view name, const Tensor& t, F&& f) {
  switch (t.storage()) {
    case Storage::F32: f(float{}); return;
    case Storage::F64: f(double{}); return;
    default: requireFloat(c, name, t);
  }
}

// Calls f(T{}) with T the element type of any storage (float, double, int64_t, uint8_t): for the
// kernels that move or select values without arithmetic.
template <typename F>
void dispatchStorage(const Tensor& t, F&& f) {
  switch (t.storage()) {
    case Storage::F32: f(float{}); return;
    case Storage::F64: f(double{}); return;
    case Storage::I64: f(int64_t{}); return;
    case Storage::U8: f(uint8_t{}); return;
  }
}

// Sums in double over 8 interleaved partial sums, combined in a fixed order: the result is the
// same on every run and machine, and the independent lanes let the compiler vectorise (a single
// running double sum is a serial dependency chain). f(i) gives element i as a double.
template <typename F> double laneSum(int64_t n, F&& f) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += f(i + l);
  for (int l = 0; i < n; ++i, ++l) lane[l] += f(i);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// Eight consecutive values as doubles, one vector (GCC/clang vector extension), for laneSums:
// lanes(One{}, p) is *p as a double, lanes(Eight{}, p) the eight values from p on.
using Lanes8 = double __attribute__((vector_size(64)));
struct One {};
struct Eight {};
template <typename T> double lanes(One, const T* p) { return double(*p); }
template <typename T> Lanes8 lanes(Eight, const T* p) {
  if constexpr (std::is_same_v<T, double>) {
    Lanes8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    float __attribute__((vector_size(32))) v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, Lanes8);
  }
}

// G laneSums of n elements each, side by side: out[g] has the bits of laneSum (each sum's 8 lanes
// take the same elements in the same order), but the G add chains interleave, so a sum bound by
// the add latency runs up to G times as fast. f(g, i, w) gives element i of sum g for w = One{}
// and elements i..i+7 for w = Eight{} (written once, generically: `lanes(w, p + i)`), as the
// compiler does not vectorise G interleaved scalar lane sets on its own.
template <int G, typename F> void laneSums(int64_t n, F&& f, double* out) {
  Lanes8 acc[G] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int g = 0; g < G; ++g) acc[g] += f(g, i, Eight{});
  for (int g = 0; g < G; ++g) {
    double a[8];
    std::memcpy(a, &acc[g], sizeof a);
    for (int64_t j = i, l = 0; j < n; ++j, ++l) a[l] += f(g, j, One{});
    out[g] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  }
}

// A pointwise op's grad: X@GRAD[i] = grad(v[i], Out@GRAD[i]), where v is the slot the grad reads
// (X; Out for relu and sqrt, as Paddle's grads read it), all of one float storage and shape.
template <typename Grad>
void pointwiseGrad(KernelContext& c, std::string_view read, Grad grad) {
  const Tensor& v = requireInput(c, read);
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireFloat(c, read, v);
  requireSameStorage(c, "Out@GRAD", g, read, v);
  requireSameShape(c, "Out@GRAD", g, read, v);
  requireSameStorage(c, "X@GRAD", dx, read, v);
  requireSameShape(c, "X@GRAD", dx, read, v);
  dispatchFloat(c, read, v, [&](auto tag) {
    using T = decltype(tag);
    const T *vp = v.data<T>(), *gp = g.data<T>();
    T* d = dx.data<T>();
    for (int64_t i = 0, n = v.numel(); i < n; ++i) d[i] = grad(vp[i], gp[i]);
  });
}

}  // namespace spopt::rt
