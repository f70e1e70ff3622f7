#pragma once
// The catalogue op -> kernel table, filled by one register function per kernel family. Kernels
// attach to definitions by canonical name (ops/op_def.h); a name the catalogue lacks is a
// std::logic_error at start-up.
#include <string_view>
#include <vector>

#include "runtime/kernels/kernels.h"

namespace spopt::rt {

struct KernelTable {
  std::vector<KernelFn> by_def;  // by OpDef::index
  void add(std::string_view canonical, KernelFn fn) {
    const OpDef& d = opDef(canonical);
    if (by_def.size() <= d.index) by_def.resize(d.index + 1, nullptr);
    by_def[d.index] = fn;
  }
};

void registerMatmulKernels(KernelTable& t);
void registerElementwiseKernels(KernelTable& t);
void registerActivationKernels(KernelTable& t);
void registerNormKernels(KernelTable& t);
void registerShapeKernels(KernelTable& t);
void registerReduceKernels(KernelTable& t);
void registerDropoutKernels(KernelTable& t);
void registerMiscKernels(KernelTable& t);
void registerPirValueKernels(KernelTable& t);
void registerConvKernels(KernelTable& t);
void registerBatchNormKernels(KernelTable& t);
void registerVisionTrainKernels(KernelTable& t);    // mul, top_k, accuracy, momentum
void registerLanguageTrainKernels(KernelTable& t);  // embedding, cross-entropy, adam, adamw
void registerVocabParallelKernels(KernelTable& t);  // c_embedding, c_softmax_with_cross_entropy
void registerAmpKernels(KernelTable& t);            // cast, loss scaling, norms, clipping
void registerLlamaKernels(KernelTable& t);          // rms_norm, silu, swiglu, rotary embedding
void registerIndexKernels(KernelTable& t);          // tril/triu, where, full_like, gather_nd
void registerSliceKernels(KernelTable& t);          // squeeze, slice, stack, expand
void registerConvTransposeKernels(KernelTable& t);  // conv2d_transpose
void registerInterpKernels(KernelTable& t);         // nearest_interp

}  // namespace spopt::rt
