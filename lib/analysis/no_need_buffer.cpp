#include "analysis/no_need_buffer.h"

namespace spopt {

namespace {
struct Entry {
  std::string_view op, slot;
};
// See the header for why each entry holds for our kernels.
constexpr Entry kNoNeedBuffer[] = {
    {"elementwise_add_grad", "X"}, {"elementwise_add_grad", "Y"}, {"elementwise_sub_grad", "X"},
    {"elementwise_sub_grad", "Y"}, {"reshape2_grad", "XShape"},   {"transpose2_grad", "XShape"},
    {"reduce_sum_grad", "X"},      {"reduce_mean_grad", "X"},     {"mean_grad", "X"},
    {"layer_norm_grad", "Bias"},
};
}  // namespace

bool readsBuffer(std::string_view op_type, std::string_view slot) {
  // Grad ops only: one comparison rejects every forward op.
  if (op_type.size() < 5 || op_type.substr(op_type.size() - 5) != "_grad") return true;
  for (const Entry& e : kNoNeedBuffer)
    if (e.op == op_type && e.slot == slot) return false;
  return true;
}

}  // namespace spopt
