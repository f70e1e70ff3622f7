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
    registerPirValueKernels(k);
    registerConvKernels(k);
    registerBatchNormKernels(k);
    registerVisionTrainKernels(k);
    registerLanguageTrainKernels(k);
    registerVocabParallelKernels(k);
    registerAmpKernels(k);
    registerLlamaKernels(k);
    registerIndexKernels(k);
    registerSliceKernels(k);
    registerConvTransposeKernels(k);
    registerInterpKernels(k);
    return k;
  }();
  return t;
}

KernelFn kernelFor(const OpDef& def) {
  const auto& k = table().by_def;
  return def.index < k.size() ? k[def.index] : nullptr;
}

KernelFn findKernel(std::string_view op_type) {
  ResolvedOp r = resolveOp(op_type);
  return r ? kernelFor(*r.def) : nullptr;
}

std::vector<std::string_view> supportedKernelOps() {
  std::vector<std::string_view> ops;
  for (const OpDef* d : allOpDefs())
    if (kernelFor(*d)) ops.push_back(d->spellings.front().type);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace spopt::rt
