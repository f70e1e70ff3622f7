#include "runtime/nccl/device_ops.h"

#include <algorithm>

#include "runtime/nccl/device_op_util.h"

namespace spopt::rt {
namespace {

const device_ops::DeviceOpTable& table() {
  static const device_ops::DeviceOpTable t = [] {
    device_ops::DeviceOpTable k;
    device_ops::registerMathOps(k);
    device_ops::registerPointwiseOps(k);
    device_ops::registerMovementOps(k);
    return k;
  }();
  return t;
}

}  // namespace

DeviceKernelFn findDeviceKernel(std::string_view op_type) {
  ResolvedOp r = resolveOp(op_type);
  if (!r) return nullptr;
  auto it = table().find(r.def->name);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string_view> deviceKernelOps() {
  std::vector<std::string_view> ops;
  for (const auto& [name, fn] : table()) ops.push_back(opDef(name).spellings.front().type);
  std::sort(ops.begin(), ops.end());
  return ops;
}

}  // namespace spopt::rt
