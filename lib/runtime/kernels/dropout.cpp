// dropout and dropout_grad.
//
// The keep mask is a pure function of (replay seed, the op's `seed` attribute, the Mask var's
// name, the global rank, element index), so a program and its rewrite draw the same mask for the
// same op, independent of execution order or thread:
//   stream = mix(mix(mix(mix(replay_seed) ^ op_seed) ^ fnv1a64(mask_name)) ^ rank)
// With fix_seed (Paddle: the op's own seed, not the global generator) the name is left out (hashed
// as ""): the seed alone names the op, so the mask survives renaming (a PIR file keeps no var
// names) and a recomputed copy of the op draws the same mask.
//   u(i)   = top 53 bits of mix(stream + (i + 1) * 0x9E3779B97F4A7C15) / 2^53   in [0, 1)
//   keep(i) = u(i) >= dropout_prob
// where mix is splitmix64's finaliser (a bijective 64-bit avalanche). The element hash is
// counter-based (no sequential state), so any slice of the mask can be computed independently.
//
// dropout_implementation:
//   "downgrade_in_infer" (default): train Out = X * mask,            test Out = X * (1 - p)
//   "upscale_in_train":             train Out = X * mask / (1 - p),  test Out = X
// In test mode a present Mask is filled with ones.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/kernels/dropout_hash.h"
#include "runtime/kernels/kernel_util.h"
#include "support/hash.h"
#include "runtime/kernels/registry.h"

namespace spopt::rt {
namespace {

using spopt::fnv1a64;

struct DropoutAttrs {
  double p;
  bool is_test;
  bool upscale;
};

DropoutAttrs dropoutAttrs(const KernelContext& c) {
  DropoutAttrs a;
  a.p = floatAttr(c, "dropout_prob", 0.5);
  if (!(a.p >= 0.0 && a.p <= 1.0)) kernelFail(c, "dropout_prob " + std::to_string(a.p) + " is outside [0, 1]");
  a.is_test = boolAttr(c, "is_test", false);
  std::string impl = stringAttr(c, "dropout_implementation", "downgrade_in_infer");
  if (impl != "downgrade_in_infer" && impl != "upscale_in_train")
    kernelFail(c, "dropout_implementation \"" + impl + "\" is neither downgrade_in_infer nor upscale_in_train");
  a.upscale = impl == "upscale_in_train";
  return a;
}

// The factor a kept element is multiplied by in training.
double keptScale(const DropoutAttrs& a) { return a.upscale ? (a.p < 1.0 ? 1.0 / (1.0 - a.p) : 0.0) : 1.0; }
// The factor every element is multiplied by in test mode.
double testScale(const DropoutAttrs& a) { return a.upscale ? 1.0 : 1.0 - a.p; }

void requireMask(const KernelContext& c, const Tensor& mask, const Tensor& like, std::string_view like_name) {
  if (mask.storage() != Storage::U8)
    kernelFail(c, "Mask is " + std::string(dtypeName(mask.dtype())) + ", not uint8 or bool");
  requireSameShape(c, "Mask", mask, like_name, like);
}

void dropout(KernelContext& c) {
  const Tensor& x = requireInput(c, "X");
  Tensor& out = requireOutput(c, "Out");
  Tensor* mask = optionalOutput(c, "Mask");
  requireFloat(c, "X", x);
  requireSameStorage(c, "Out", out, "X", x);
  requireSameShape(c, "Out", out, "X", x);
  if (mask) requireMask(c, *mask, x, "X");
  DropoutAttrs a = dropoutAttrs(c);
  int64_t n = x.numel();
  if (a.is_test) {
    double s = testScale(a);
    dispatchFloat(c, "X", x, [&](auto tag) {
      using T = decltype(tag);
      const T* xp = x.data<T>();
      T* o = out.data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = T(s) * xp[i];
    });
    if (mask) std::fill(mask->data<uint8_t>(), mask->data<uint8_t>() + n, uint8_t(1));
    return;
  }
  const Slot* mask_slot = c.op.output("Mask");
  std::string_view mask_name = mask_slot && !mask_slot->args.empty() && !boolAttr(c, "fix_seed", false)
                                  ? mask_slot->args[0].name
                                  : std::string_view();
  uint64_t op_seed = uint64_t(intAttr(c, "seed", 0));
  uint64_t stream = dropout_hash::stream(c.seed, op_seed, fnv1a64(mask_name), uint64_t(c.rank));
  // keep iff u >= p, i.e. the 53-bit draw >= ceil(p * 2^53) (p = 1 drops all, p = 0 keeps all).
  const uint64_t threshold = uint64_t(std::ceil(a.p * 9007199254740992.0));
  double s = keptScale(a);
  dispatchFloat(c, "X", x, [&](auto tag) {
    using T = decltype(tag);
    const T* xp = x.data<T>();
    T* o = out.data<T>();
    auto keep = [&](int64_t i) { return dropout_hash::keep(stream, i, threshold); };
    // Branch-free loops (with and without a Mask) so the compiler can vectorise the hash.
    if (mask) {
      uint8_t* m = mask->data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) m[i] = uint8_t(keep(i));
      for (int64_t i = 0; i < n; ++i) {
        T v = T(s) * xp[i];  // unconditional, so the select below needs no branch
        o[i] = m[i] ? v : T(0);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        T v = T(s) * xp[i];
        o[i] = keep(i) ? v : T(0);
      }
    }
  });
}

// dropout_grad: dX = dOut * mask * kept scale in training; dOut * test scale in test mode.
void dropoutGrad(KernelContext& c) {
  const Tensor& g = requireInput(c, "Out@GRAD");
  Tensor& dx = requireOutput(c, "X@GRAD");
  requireFloat(c, "Out@GRAD", g);
  requireSameStorage(c, "X@GRAD", dx, "Out@GRAD", g);
  requireSameShape(c, "X@GRAD", dx, "Out@GRAD", g);
  DropoutAttrs a = dropoutAttrs(c);
  int64_t n = g.numel();
  if (a.is_test) {
    double s = testScale(a);
    dispatchFloat(c, "Out@GRAD", g, [&](auto tag) {
      using T = decltype(tag);
      const T* gp = g.data<T>();
      T* d = dx.data<T>();
      for (int64_t i = 0; i < n; ++i) d[i] = T(s) * gp[i];
    });
    return;
  }
  const Tensor& mask = requireInput(c, "Mask");
  requireMask(c, mask, g, "Out@GRAD");
  double s = keptScale(a);
  dispatchFloat(c, "Out@GRAD", g, [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.data<T>();
    const uint8_t* m = mask.data<uint8_t>();
    T* d = dx.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      T v = T(s) * gp[i];
      d[i] = m[i] ? v : T(0);
    }
  });
}

}  // namespace

void registerDropoutKernels(KernelTable& t) {
  t.add("dropout", dropout);
  t.add("dropout_grad", dropoutGrad);
}

}  // namespace spopt::rt
