#pragma once
// STAND-IN until the shared no-need-buffer table (lib/analysis/no_need_buffer.h) lands on main;
// deleted at the merge.
#include <string_view>

namespace spopt {

inline bool noNeedBufferSlot(std::string_view op, std::string_view slot) {
  if (op == "elementwise_add_grad" || op == "elementwise_sub_grad") return slot == "X" || slot == "Y";
  if (op == "reshape2_grad" || op == "transpose2_grad") return slot == "XShape";
  if (op == "reduce_sum_grad" || op == "reduce_mean_grad" || op == "mean_grad") return slot == "X";
  if (op == "layer_norm_grad") return slot == "Bias";
  return false;
}

}  // namespace spopt
