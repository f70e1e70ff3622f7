// The registry: op type -> KernelFn, built once on first use (thread-safe static init).
#include <algorithm>

#include "runtime/kernels/registry.h"

namespace spopt::rt {

static const KernelTable& table() {
  static const KernelTable t = [] {
    KernelTable k;
    registerMatmulKernels(k);
    registerElementwiseKernels(k);
    registerActivationKernels(k);
    registerNormKernels(k);
    registerShapeKernels(k);
    registerReduceKernels(k);
    registerDropoutKernels(k);
    registerMiscKernels(k);
    return k;
  }();
  return t;
}

KernelFn findKernel(std::string_view op_type) {
  auto it = table().by_type.find(op_type);
  return it == table().by_type.end() ? nullptr : it->second;
}

std::vector<std::string_view> supportedKernelOps() {
  std::vector<std::string_view> ops;
  for (const auto& [type, fn] : table().by_type) ops.push_back(type);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace spopt::rt
