#pragma once
// The op type -> kernel table, filled by one register function per kernel family.
#include <string_view>
#include <unordered_map>

#include "runtime/kernels/kernels.h"

namespace spopt::rt {

struct KernelTable {
  std::unordered_map<std::string_view, KernelFn> by_type;
  void add(std::string_view type, KernelFn fn) { by_type.emplace(type, fn); }
};

void registerMatmulKernels(KernelTable& t);
void registerElementwiseKernels(KernelTable& t);
void registerActivationKernels(KernelTable& t);
void registerNormKernels(KernelTable& t);
void registerShapeKernels(KernelTable& t);
void registerReduceKernels(KernelTable& t);
void registerDropoutKernels(KernelTable& t);
void registerMiscKernels(KernelTable& t);

}  // namespace spopt::rt
