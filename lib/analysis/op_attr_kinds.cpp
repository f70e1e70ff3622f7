#include "analysis/op_attr_kinds.h"

#include <initializer_list>
#include <string>
#include <utility>

#include "ir/json_text.h"

namespace spopt {
namespace {

struct AttrRule {
  std::initializer_list<std::string_view> ops;
  std::string_view attr;
  AttrKind kind;
};

// Which kernel reads which attribute as what (runtime/kernels/*.cpp and matmul_plan.h).
// fill_constant's dtype (a name or a code) and str_value (a string, or a number as Paddle's program
// text prints it) are checked by its own rule in op_shape_rules.
const AttrRule kRules[] = {
    {{"matmul_v2", "matmul_v2_grad"}, "trans_x", AttrKind::Bool},
    {{"matmul_v2", "matmul_v2_grad"}, "trans_y", AttrKind::Bool},
    {{"elementwise_add", "elementwise_mul", "elementwise_add_grad", "elementwise_mul_grad"}, "axis", AttrKind::Int},
    {{"softmax", "softmax_grad", "concat", "split"}, "axis", AttrKind::Int},
    {{"transpose2", "transpose2_grad"}, "axis", AttrKind::Ints},
    {{"reshape2", "fill_constant"}, "shape", AttrKind::Ints},
    {{"gelu", "gelu_grad"}, "approximate", AttrKind::Bool},
    {{"layer_norm", "layer_norm_grad"}, "begin_norm_axis", AttrKind::Int},
    {{"layer_norm", "layer_norm_grad"}, "epsilon", AttrKind::Float},
    {{"reduce_sum", "reduce_mean", "reduce_sum_grad", "reduce_mean_grad"}, "dim", AttrKind::Ints},
    {{"reduce_sum", "reduce_mean", "reduce_sum_grad", "reduce_mean_grad"}, "keep_dim", AttrKind::Bool},
    {{"reduce_sum", "reduce_mean", "reduce_sum_grad", "reduce_mean_grad"}, "reduce_all", AttrKind::Bool},
    {{"scale"}, "scale", AttrKind::Float},
    {{"scale"}, "bias", AttrKind::Float},
    {{"scale"}, "bias_after_scale", AttrKind::Bool},
    {{"dropout", "dropout_grad"}, "dropout_prob", AttrKind::Float},
    {{"dropout", "dropout_grad"}, "is_test", AttrKind::Bool},
    {{"dropout", "dropout_grad"}, "seed", AttrKind::Int},
    {{"dropout", "dropout_grad"}, "dropout_implementation", AttrKind::String},
    {{"fill_constant"}, "value", AttrKind::Float},
    {{"split"}, "num", AttrKind::Int},
    {{"split"}, "sections", AttrKind::Ints},
};

const char* kindName(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "an integer";
    case AttrKind::Float: return "a number";
    case AttrKind::Bool: return "a boolean";
    case AttrKind::String: return "a string";
    case AttrKind::Ints: return "a list of integers";
  }
  return "?";
}

}  // namespace

bool attrReadsAs(std::string_view raw, AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return rawToIntLenient(raw).has_value();
    case AttrKind::Float: return rawToNumber(raw).has_value();
    case AttrKind::Bool: return rawToBoolLenient(raw).has_value();
    case AttrKind::String: return rawToString(raw).has_value();
    case AttrKind::Ints: return rawToIntsLenient(raw).has_value();
  }
  return false;
}

std::optional<OpRuleError> checkAttrKinds(const Op& op) {
  for (const AttrRule& r : kRules) {
    bool applies = false;
    for (std::string_view t : r.ops) applies = applies || t == op.type;
    if (!applies) continue;
    const std::string_view* raw = op.attrs.find(r.attr);
    if (!raw || attrReadsAs(*raw, r.kind)) continue;
    return OpRuleError{"/attrs/" + std::string(r.attr),
                       std::string(op.type) + ": attribute " + std::string(r.attr) + " is not " + kindName(r.kind) + ": " + std::string(*raw)};
  }
  return std::nullopt;
}

}  // namespace spopt
