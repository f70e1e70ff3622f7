#include "analysis/op_shape_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ir/json_text.h"

namespace spopt {

std::string dimsText(const ShapeDims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

std::optional<AlignedBroadcast> alignBroadcast(const ShapeDims& x, const ShapeDims& y, int64_t axis, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<AlignedBroadcast> {
    if (why) *why = w;
    return std::nullopt;
  };
  bool y_shorter = y.size() <= x.size();
  ShapeDims longer = y_shorter ? x : y, shorter = y_shorter ? y : x;
  int64_t start = axis == -1 ? int64_t(longer.size() - shorter.size()) : axis;
  while (axis != -1 && !shorter.empty() && shorter.back() == 1 && start + int64_t(shorter.size()) > int64_t(longer.size()))
    shorter.pop_back();
  if (axis == -1) start = int64_t(longer.size() - shorter.size());
  if (start < 0 || start + int64_t(shorter.size()) > int64_t(longer.size())) return fail("axis out of range");
  size_t rank = longer.size();
  ShapeDims padded(rank, 1);
  for (size_t i = 0; i < shorter.size(); ++i) padded[size_t(start) + i] = shorter[i];
  AlignedBroadcast a;
  a.x = y_shorter ? longer : padded;
  a.y = y_shorter ? padded : longer;
  a.out.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (a.x[d] != a.y[d] && a.x[d] != 1 && a.y[d] != 1) return fail("dim " + std::to_string(d) + " differs");
    a.out[d] = a.x[d] == 1 ? a.y[d] : a.x[d];
  }
  return a;
}

std::optional<ShapeDims> resolveReshape(const ShapeDims& x, ShapeDims target, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<ShapeDims> {
    if (why) *why = w;
    return std::nullopt;
  };
  const ShapeDims original = target;
  int64_t x_numel = 1;
  for (int64_t d : x)
    if (__builtin_mul_overflow(x_numel, d, &x_numel)) return fail("X " + dimsText(x) + " has too many elements");
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0) {
      if (i >= x.size()) return fail("shape " + dimsText(original) + " copies dim " + std::to_string(i) + " that X " + dimsText(x) + " lacks");
      target[i] = x[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) return fail("shape " + dimsText(original) + " has more than one -1");
      infer = int64_t(i);
    } else if (target[i] < 0) {
      return fail("shape " + dimsText(original) + " has a negative dim");
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      return fail("shape " + dimsText(original) + " has too many elements");
    }
  }
  if (infer >= 0) {
    if (known == 0 || x_numel % known != 0) return fail("cannot infer the -1 of shape " + dimsText(original) + " from X " + dimsText(x));
    target[size_t(infer)] = x_numel / known;
  } else if (known != x_numel) {
    return fail("shape " + dimsText(original) + " does not hold the " + std::to_string(x_numel) + " elements of X " + dimsText(x));
  }
  return target;
}

DTypeStorage dtypeStorage(DType t) {
  switch (t) {
    case DType::Float64: return DTypeStorage::F64;
    case DType::Int32:
    case DType::Int64: return DTypeStorage::I64;
    case DType::Bool:
    case DType::UInt8: return DTypeStorage::U8;
    default: return DTypeStorage::F32;
  }
}

std::optional<DType> dtypeFromPaddleCode(int64_t code) {
  switch (code) {
    case 0: return DType::Bool;
    case 2: return DType::Int32;
    case 3: return DType::Int64;
    case 4: return DType::Float16;
    case 5: return DType::Float32;
    case 6: return DType::Float64;
    case 20: return DType::UInt8;
    case 22: return DType::BFloat16;
    default: return std::nullopt;
  }
}

std::optional<ShapeDims> broadcastBatchDims(const ShapeDims& a, const ShapeDims& b) {
  size_t n = std::max(a.size(), b.size());
  ShapeDims out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<ShapeDims> resolvePermutation(ShapeDims perm, size_t rank) {
  if (perm.size() != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (int64_t& a : perm) {
    if (a < 0) a += int64_t(rank);
    if (a < 0 || a >= int64_t(rank) || seen[size_t(a)]) return std::nullopt;
    seen[size_t(a)] = true;
  }
  return perm;
}

namespace {

bool known(const Var* v) {
  if (!v) return false;
  for (auto d : v->shape)
    if (d < 0) return false;
  return true;
}

// Attribute readers with the kernels' leniency (ir/json_text.h). Absent: the default. Present but
// unreadable: nullopt, and the rule is skipped (op_attr_kinds reports the attribute's type).
std::optional<int64_t> intAttr(const Op& op, std::string_view key, int64_t def) {
  const std::string_view* raw = op.attrs.find(key);
  return raw ? rawToIntLenient(*raw) : def;
}
std::optional<bool> boolAttr(const Op& op, std::string_view key, bool def) {
  const std::string_view* raw = op.attrs.find(key);
  return raw ? rawToBoolLenient(*raw) : def;
}
std::optional<ShapeDims> intsAttr(const Op& op, std::string_view key, ShapeDims def) {
  const std::string_view* raw = op.attrs.find(key);
  return raw ? rawToIntsLenient(*raw) : def;
}

using Result = std::optional<OpRuleError>;
Result fail(const Op& op, std::string where, const std::string& message) {
  return OpRuleError{std::move(where), std::string(op.type) + ": " + message};
}
bool hasArg(const Slot* s) { return s && !s->args.empty(); }

// The slots each kernel requires (requireInput / requireOutput in runtime/kernels).
struct SlotRule {
  std::string_view type;
  std::vector<std::string_view> inputs, outputs;
};
const std::vector<SlotRule>& slotRules() {
  static const std::vector<SlotRule> rules = {
      {"elementwise_add", {"X", "Y"}, {"Out"}},
      {"elementwise_mul", {"X", "Y"}, {"Out"}},
      {"elementwise_add_grad", {"X", "Y", "Out@GRAD"}, {}},
      {"elementwise_mul_grad", {"X", "Y", "Out@GRAD"}, {}},
      {"matmul_v2_grad", {"X", "Y", "Out@GRAD"}, {}},
      {"reshape2", {"X"}, {"Out"}},
      {"reshape2_grad", {"XShape", "Out@GRAD"}, {"X@GRAD"}},
      {"transpose2", {"X"}, {"Out"}},
      {"transpose2_grad", {"XShape", "Out@GRAD"}, {"X@GRAD"}},
      {"layer_norm", {"X"}, {"Y"}},
      {"layer_norm_grad", {"X", "Mean", "Variance", "Y@GRAD"}, {}},
      {"dropout", {"X"}, {"Out"}},
      {"dropout_grad", {"Out@GRAD"}, {"X@GRAD"}},  // and Mask unless is_test: checkDropout
      {"gelu", {"X"}, {"Out"}},
      {"gelu_grad", {"X", "Out@GRAD"}, {"X@GRAD"}},
      {"relu", {"X"}, {"Out"}},
      {"relu_grad", {"Out", "Out@GRAD"}, {"X@GRAD"}},
      {"softmax", {"X"}, {"Out"}},
      {"softmax_grad", {"Out", "Out@GRAD"}, {"X@GRAD"}},
      {"scale", {"X"}, {"Out"}},
      {"fill_constant", {}, {"Out"}},
      {"assign", {"X"}, {"Out"}},
      {"depend", {"X"}, {"Out"}},
      {"sgd", {"Param", "LearningRate", "Grad"}, {"ParamOut"}},
      {"reduce_sum", {"X"}, {"Out"}},
      {"reduce_mean", {"X"}, {"Out"}},
      {"mean", {"X"}, {"Out"}},
      {"reduce_sum_grad", {"Out@GRAD"}, {"X@GRAD"}},
      {"reduce_mean_grad", {"Out@GRAD"}, {"X@GRAD"}},
      {"mean_grad", {"Out@GRAD"}, {"X@GRAD"}},
      {"sum", {"X"}, {"Out"}},
  };
  return rules;
}

Result checkSlots(const Op& op) {
  for (const SlotRule& r : slotRules()) {
    if (r.type != op.type) continue;
    for (auto s : r.inputs)
      if (!hasArg(op.input(s))) return fail(op, "/inputs", "missing input " + std::string(s));
    for (auto s : r.outputs)
      if (!hasArg(op.output(s))) return fail(op, "/outputs", "missing output " + std::string(s));
    return std::nullopt;
  }
  return std::nullopt;
}

Result requireDims(const Op& op, std::string_view dir, std::string_view slot, const Var* v, const ShapeDims& want, std::string_view why) {
  if (!known(v) || v->shape == want) return std::nullopt;
  return fail(op, std::string(dir) + "/" + std::string(slot) + "/0",
              std::string(slot) + " " + dimsText(v->shape) + " should be " + dimsText(want) + " (" + std::string(why) + ")");
}

// A kernel's requireSameStorage(a, b): `a` (in `dir`) must be stored like `b`.
Result requireSameStorage(const Op& op, std::string_view dir, std::string_view a_slot, const Var* a, std::string_view b_slot, const Var* b) {
  if (!a || !b || dtypeStorage(a->dtype) == dtypeStorage(b->dtype)) return std::nullopt;
  return fail(op, std::string(dir) + "/" + std::string(a_slot) + "/0",
              std::string(a_slot) + " is " + std::string(dtypeName(a->dtype)) + " but " + std::string(b_slot) + " is " + std::string(dtypeName(b->dtype)));
}

// A kernel's requireFloat / dispatchFloat: the input is stored as float32 or float64.
Result requireFloat(const Op& op, std::string_view slot, const Var* v) {
  if (!v) return std::nullopt;
  auto st = dtypeStorage(v->dtype);
  if (st == DTypeStorage::F32 || st == DTypeStorage::F64) return std::nullopt;
  return fail(op, "/inputs/" + std::string(slot) + "/0", std::string(slot) + " is " + std::string(dtypeName(v->dtype)) + ", not a floating type");
}

Result checkElementwise(const Op& op, bool grad) {
  const Var *x = op.in("X"), *y = op.in("Y");
  if (auto e = requireSameStorage(op, "/inputs", "Y", y, "X", x)) return e;
  if (grad) {
    if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), "X", x)) return e;
  } else if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) {
    return e;
  }
  if (auto e = requireFloat(op, "X", x)) return e;
  if (!known(x) || !known(y)) return std::nullopt;
  auto axis = intAttr(op, "axis", -1);
  if (!axis) return std::nullopt;
  std::string why;
  auto b = alignBroadcast(x->shape, y->shape, *axis, &why);
  if (!b)
    return fail(op, why == "axis out of range" ? "/attrs/axis" : "",
                "X " + dimsText(x->shape) + " and Y " + dimsText(y->shape) + " do not broadcast with axis=" + std::to_string(*axis) + ": " + why);
  if (grad) {
    if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), b->out, "X and Y broadcast")) return e;
    if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "the shape of X")) return e;
    return requireDims(op, "/outputs", "Y@GRAD", op.out("Y@GRAD"), y->shape, "the shape of Y");
  }
  return requireDims(op, "/outputs", "Out", op.out("Out"), b->out, "X and Y broadcast");
}

// Out, when present, is [0, ...X dims] (Paddle's record of X's shape for the grad op).
Result checkXShape(const Op& op, const Var* x) {
  ShapeDims want = x->shape;
  want.insert(want.begin(), 0);
  return requireDims(op, "/outputs", "XShape", op.out("XShape"), want, "[0, ...X dims]");
}

Result checkReshape(const Op& op) {
  const Var* x = op.in("X");
  if (!known(x) || hasArg(op.input("Shape"))) return std::nullopt;  // a Shape input is data
  auto shape = intsAttr(op, "shape", {});
  if (!shape) return std::nullopt;
  std::string why;
  auto target = resolveReshape(x->shape, *shape, &why);
  if (!target) return fail(op, "/attrs/shape", why);
  if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), *target, "X reshaped")) return e;
  return checkXShape(op, x);
}

Result checkTranspose(const Op& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  auto axis = intsAttr(op, "axis", {});
  if (!axis) return std::nullopt;
  auto perm = resolvePermutation(*axis, x->shape.size());
  if (!perm) return fail(op, "/attrs/axis", "axis " + dimsText(*axis) + " is no permutation of " + std::to_string(x->shape.size()) + " dims");
  ShapeDims want(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) want[i] = x->shape[size_t((*perm)[i])];
  if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), want, "X transposed by axis")) return e;
  return checkXShape(op, x);
}

// softmax(_grad)'s axis lies within the rank of its operand (a 0-D operand has none to check).
Result checkSoftmaxAxis(const Op& op, const ShapeDims& shape) {
  auto axis = intAttr(op, "axis", -1);
  int64_t r = int64_t(shape.size());
  if (r == 0 || !axis || (*axis >= -r && *axis < r)) return std::nullopt;
  return fail(op, "/attrs/axis", "axis " + std::to_string(*axis) + " is out of range for rank " + std::to_string(r));
}

// gelu, relu, softmax: Out has X's shape; softmax's axis is a dim of X.
Result checkUnary(const Op& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape")) return e;
  return op.type == "softmax" ? checkSoftmaxAxis(op, x->shape) : std::nullopt;
}

Result checkLayerNorm(const Op& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (op.type == "layer_norm")
    if (auto e = requireSameStorage(op, "/outputs", "Y", op.out("Y"), "X", x)) return e;
  if (!known(x) || x->shape.empty()) return std::nullopt;
  auto axis = intAttr(op, "begin_norm_axis", 1);
  int64_t r = int64_t(x->shape.size());
  if (axis && (*axis < -r || *axis > r))
    return fail(op, "/attrs/begin_norm_axis", "begin_norm_axis " + std::to_string(*axis) + " is out of range for X " + dimsText(x->shape));
  if (auto e = requireDims(op, "/outputs", "Y", op.out("Y"), x->shape, "X's shape")) return e;
  if (!axis) return std::nullopt;
  // Scale and Bias hold one value per normalised element, Mean and Variance one per row.
  size_t begin = size_t(*axis < 0 ? *axis + r : *axis);
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < x->shape.size(); ++d) (d < begin ? rows : cols) *= x->shape[d];
  auto count = [&](std::string_view dir, std::string_view slot, const Var* v, int64_t n, const char* what) -> Result {
    if (!known(v) || v->numel() == n) return std::nullopt;
    return fail(op, std::string(dir) + "/" + std::string(slot) + "/0",
                std::string(slot) + " " + dimsText(v->shape) + " should hold " + std::to_string(n) + " values (" + what + ")");
  };
  bool grad = op.type == "layer_norm_grad";
  if (auto e = count("/inputs", "Scale", op.in("Scale"), cols, "the normalised dims of X")) return e;
  if (!grad) return count("/inputs", "Bias", op.in("Bias"), cols, "the normalised dims of X");
  if (auto e = requireDims(op, "/inputs", "Y@GRAD", op.in("Y@GRAD"), x->shape, "X's shape")) return e;
  if (auto e = count("/inputs", "Mean", op.in("Mean"), rows, "the leading dims of X")) return e;
  if (auto e = count("/inputs", "Variance", op.in("Variance"), rows, "the leading dims of X")) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", op.out("X@GRAD"), "X", x)) return e;
  if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), x->shape, "X's shape")) return e;
  if (auto e = count("/outputs", "Scale@GRAD", op.out("Scale@GRAD"), cols, "the normalised dims of X")) return e;
  return count("/outputs", "Bias@GRAD", op.out("Bias@GRAD"), cols, "the normalised dims of X");
}

// matmul_v2_grad (runtime/kernels/matmul.cpp): operands stored alike; each input's gradient has
// its input's shape and storage.
Result checkMatmulGrad(const Op& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/inputs", "Y", op.in("Y"), "X", x)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), "X", x)) return e;
  for (const char* in : {"X", "Y"}) {
    const Var* v = op.in(in);
    std::string grad = std::string(in) + "@GRAD";
    if (auto e = requireSameStorage(op, "/outputs", grad, op.out(grad), in, v)) return e;
    if (known(v))
      if (auto e = requireDims(op, "/outputs", grad, op.out(grad), v->shape, std::string(in) + "'s shape")) return e;
  }
  return std::nullopt;
}

// The declared shape of a reduction of `x` (runtime/kernels/reduce.cpp reduceSpec): `dim` (default
// [0]) normalised, all dims when reduce_all, dim is empty or x is 0-D (and always for `mean`).
Result reducedShape(const Op& op, const Var* x, std::string_view dir, std::string_view slot, const Var* y) {
  bool all_by_op = op.type == "mean" || op.type == "mean_grad";
  auto reduce_all = boolAttr(op, "reduce_all", false);
  auto dims = all_by_op ? std::optional<ShapeDims>(ShapeDims{}) : intsAttr(op, "dim", {0});
  auto keep = boolAttr(op, "keep_dim", false);
  if (!reduce_all || !dims || !keep) return std::nullopt;
  bool all = all_by_op || *reduce_all || dims->empty() || x->shape.empty();
  bool keep_dim = !all_by_op && *keep;
  size_t r = x->shape.size();
  std::vector<bool> reduced(r, all);
  for (int64_t d : *dims) {
    if (all) break;
    int64_t a = d < 0 ? d + int64_t(r) : d;
    if (a < 0 || a >= int64_t(r)) return fail(op, "/attrs/dim", "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(r));
    reduced[size_t(a)] = true;
  }
  ShapeDims out;
  for (size_t d = 0; d < r; ++d)
    if (!reduced[d]) out.push_back(x->shape[d]);
    else if (keep_dim) out.push_back(1);
  if (out.empty() && known(y) && y->shape == ShapeDims{1}) return std::nullopt;  // [1] or [] for a full reduction
  return requireDims(op, dir, slot, y, out, "X reduced");
}

Result checkReduce(const Op& op) {
  const Var* x = op.in("X");
  if (auto e = requireFloat(op, "X", x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (!known(x)) return std::nullopt;
  return reducedShape(op, x, "/outputs", "Out", op.out("Out"));
}

// reduce_*_grad: X@GRAD has X's shape (when X is given) and Out@GRAD is X@GRAD reduced.
Result checkReduceGrad(const Op& op) {
  const Var *g = op.in("Out@GRAD"), *dx = op.out("X@GRAD");
  if (auto e = requireFloat(op, "Out@GRAD", g)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", dx, "Out@GRAD", g)) return e;
  if (!known(dx)) return std::nullopt;
  if (const Var* x = op.in("X"); known(x))
    if (auto e = requireDims(op, "/outputs", "X@GRAD", dx, x->shape, "the shape of X")) return e;
  return reducedShape(op, dx, "/inputs", "Out@GRAD", g);
}

// reshape2_grad / transpose2_grad: XShape is [0, ...X dims]; X@GRAD has X's dims; for transpose2,
// Out@GRAD is X transposed by axis.
Result checkShapeGrad(const Op& op) {
  const Var *xs = op.in("XShape"), *g = op.in("Out@GRAD"), *dx = op.out("X@GRAD");
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", dx, "Out@GRAD", g)) return e;
  if (!known(xs)) return std::nullopt;
  if (xs->shape.empty()) return fail(op, "/inputs/XShape/0", "XShape [] should be [0, ...X dims]");
  ShapeDims xdims(xs->shape.begin() + 1, xs->shape.end());
  if (auto e = requireDims(op, "/outputs", "X@GRAD", dx, xdims, "XShape's dims[1:]")) return e;
  if (op.type != "transpose2_grad") return std::nullopt;
  auto axis = intsAttr(op, "axis", {});
  if (!axis) return std::nullopt;
  auto perm = resolvePermutation(*axis, xdims.size());
  if (!perm) return fail(op, "/attrs/axis", "axis " + dimsText(*axis) + " is no permutation of " + std::to_string(xdims.size()) + " dims");
  ShapeDims want(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) want[i] = xdims[size_t((*perm)[i])];
  return requireDims(op, "/inputs", "Out@GRAD", g, want, "X transposed by axis");
}

Result checkDropout(const Op& op) {
  bool grad = op.type == "dropout_grad";
  auto is_test = boolAttr(op, "is_test", false);
  if (grad && is_test && !*is_test && !hasArg(op.input("Mask"))) return fail(op, "/inputs", "missing input Mask");
  const Var* x = op.in(grad ? "Out@GRAD" : "X");
  if (auto e = requireFloat(op, grad ? "Out@GRAD" : "X", x)) return e;
  if (auto e = requireSameStorage(op, "/outputs", grad ? "X@GRAD" : "Out", op.out(grad ? "X@GRAD" : "Out"), grad ? "Out@GRAD" : "X", x)) return e;
  const Var* m = grad ? op.in("Mask") : op.out("Mask");
  if (m && dtypeStorage(m->dtype) != DTypeStorage::U8)
    return fail(op, std::string(grad ? "/inputs" : "/outputs") + "/Mask/0", "Mask is " + std::string(dtypeName(m->dtype)) + ", not uint8 or bool");
  if (known(x)) {
    if (auto e = requireDims(op, "/outputs", grad ? "X@GRAD" : "Out", op.out(grad ? "X@GRAD" : "Out"), x->shape, grad ? "Out@GRAD's shape" : "X's shape")) return e;
    const Var* mask = grad ? op.in("Mask") : op.out("Mask");
    if (auto e = requireDims(op, grad ? "/inputs" : "/outputs", "Mask", mask, x->shape, grad ? "Out@GRAD's shape" : "X's shape")) return e;
  }
  if (const std::string_view* raw = op.attrs.find("dropout_prob")) {
    auto p = rawToNumber(*raw);
    if (p && !(*p >= 0.0 && *p <= 1.0)) return fail(op, "/attrs/dropout_prob", "dropout_prob " + std::to_string(*p) + " is outside [0, 1]");
  }
  if (const std::string_view* raw = op.attrs.find("dropout_implementation")) {
    auto impl = rawToString(*raw);
    if (impl && *impl != "downgrade_in_infer" && *impl != "upscale_in_train")
      return fail(op, "/attrs/dropout_implementation", "dropout_implementation \"" + *impl + "\" is neither downgrade_in_infer nor upscale_in_train");
  }
  return std::nullopt;
}

// gelu_grad (against X), relu_grad and softmax_grad (against Out): Out@GRAD and X@GRAD are stored
// and shaped like the reference; softmax_grad's axis is a dim of it.
Result checkPointwiseGrad(const Op& op) {
  const char* ref_slot = op.type == "gelu_grad" ? "X" : "Out";
  const Var* ref = op.in(ref_slot);
  if (auto e = requireFloat(op, ref_slot, ref)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), ref_slot, ref)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "X@GRAD", op.out("X@GRAD"), ref_slot, ref)) return e;
  if (!known(ref)) return std::nullopt;
  const std::string why = std::string(ref_slot) + "'s shape";
  if (auto e = requireDims(op, "/inputs", "Out@GRAD", op.in("Out@GRAD"), ref->shape, why)) return e;
  if (auto e = requireDims(op, "/outputs", "X@GRAD", op.out("X@GRAD"), ref->shape, why)) return e;
  return op.type == "softmax_grad" ? checkSoftmaxAxis(op, ref->shape) : std::nullopt;
}

// scale: Out like X; a ScaleTensor holds one element.
Result checkScale(const Op& op) {
  const Var* x = op.in("X");
  if (auto e = requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x)) return e;
  if (known(x))
    if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape")) return e;
  const Var* st = op.in("ScaleTensor");
  if (known(st) && st->numel() != 1)
    return fail(op, "/inputs/ScaleTensor/0", "ScaleTensor " + dimsText(st->shape) + " should hold one element");
  return std::nullopt;
}

// sum: every X stored and shaped like Out, which is floating.
Result checkSum(const Op& op) {
  const Var* out = op.out("Out");
  if (!out) return std::nullopt;
  auto st = dtypeStorage(out->dtype);
  if (st != DTypeStorage::F32 && st != DTypeStorage::F64)
    return fail(op, "/outputs/Out/0", "Out is " + std::string(dtypeName(out->dtype)) + ", not a floating type");
  const Slot* xs = op.input("X");
  for (size_t i = 0; xs && i < xs->args.size(); ++i) {
    const Var* x = xs->args[i].var;
    std::string name = "X[" + std::to_string(i) + "]", at = "/inputs/X/" + std::to_string(i);
    if (dtypeStorage(x->dtype) != st) return fail(op, at, name + " is " + std::string(dtypeName(x->dtype)) + " but Out is " + std::string(dtypeName(out->dtype)));
    if (known(x) && known(out) && x->shape != out->shape) return fail(op, at, name + " " + dimsText(x->shape) + " differs from Out " + dimsText(out->shape));
  }
  return std::nullopt;
}

// nop: no outputs, or one Out per X.
Result checkNop(const Op& op) {  // nop: no Out, or Out[i] = X[i]; depend: Out = X
  size_t n_out = op.outputCount("Out"), n_in = op.inputCount("X");
  if (n_out && n_out != n_in) return fail(op, "/outputs/Out", "has " + std::to_string(n_out) + " Out but " + std::to_string(n_in) + " X");
  for (size_t i = 0; i < n_out; ++i)
    if (const Var *x = op.input("X")->args[i].var, *o = op.output("Out")->args[i].var; known(x) && known(o) && x->shape != o->shape)
      return fail(op, "/outputs/Out/" + std::to_string(i), "Out " + dimsText(o->shape) + " should be " + dimsText(x->shape) + " (X's shape)");
  return std::nullopt;
}

// fill_constant (runtime/kernels/misc.cpp): a dtype attribute (name or Paddle code) stored like
// Out; a shape attribute, unless a ShapeTensor gives it, matching Out ([] and [1] both hold one
// value); a non-empty str_value that is a number; a ValueTensor of one element.
Result checkFillConstant(const Op& op) {
  const Var* out = op.out("Out");
  if (!out) return std::nullopt;
  if (const std::string_view* raw = op.attrs.find("dtype")) {
    std::optional<DType> t;
    if (rawIsString(*raw)) {
      std::string name = rawToString(*raw).value_or("");
      std::string_view n = name;
      if (n.substr(0, 7) == "paddle.") n.remove_prefix(7);
      t = parseDType(n);
      if (!t) return fail(op, "/attrs/dtype", "dtype \"" + name + "\" is not a known dtype");
    } else if (auto code = intAttr(op, "dtype", 5)) {
      t = dtypeFromPaddleCode(*code);
      if (!t) return fail(op, "/attrs/dtype", "dtype " + std::to_string(*code) + " is not a supported Paddle dtype code");
    }
    if (t && dtypeStorage(*t) != dtypeStorage(out->dtype))
      return fail(op, "/attrs/dtype", "dtype attribute " + std::string(dtypeName(*t)) + " disagrees with Out's " + std::string(dtypeName(out->dtype)));
  }
  bool shape_from_input = hasArg(op.input("ShapeTensor")) || op.inputCount("ShapeTensorList") > 0;
  if (!shape_from_input && op.attrs.has("shape") && known(out)) {
    auto shape = intsAttr(op, "shape", {});
    if (shape && out->shape != *shape && !(shape->empty() && out->numel() == 1) && !(out->shape.empty() && *shape == ShapeDims{1}))
      return fail(op, "/outputs/Out/0", "Out " + dimsText(out->shape) + " should be " + dimsText(*shape) + " (the shape attribute)");
  }
  std::string str;
  if (const std::string_view* raw = op.attrs.find("str_value")) str = rawToNumber(*raw) ? std::string(*raw) : rawToString(*raw).value_or("");
  if (!str.empty()) {
    char* end = nullptr;
    std::strtod(str.c_str(), &end);
    if (end == str.c_str() || *end) return fail(op, "/attrs/str_value", "str_value \"" + str + "\" is not a number");
  } else if (const Var* vt = op.in("ValueTensor"); known(vt) && vt->numel() != 1) {
    return fail(op, "/inputs/ValueTensor/0", "ValueTensor " + dimsText(vt->shape) + " should hold one element");
  }
  return std::nullopt;
}

// assign: Out is X's copy (same storage and shape).
Result checkAssign(const Op& op) {
  const Var* x = op.in("X");
  if (known(x))
    if (auto e = requireDims(op, "/outputs", "Out", op.out("Out"), x->shape, "X's shape")) return e;
  return requireSameStorage(op, "/outputs", "Out", op.out("Out"), "X", x);
}

Result checkSgd(const Op& op) {
  const Var* param = op.in("Param");
  if (auto e = requireFloat(op, "Param", param)) return e;
  if (auto e = requireSameStorage(op, "/inputs", "Grad", op.in("Grad"), "Param", param)) return e;
  if (auto e = requireSameStorage(op, "/outputs", "ParamOut", op.out("ParamOut"), "Param", param)) return e;
  if (known(param)) {
    if (auto e = requireDims(op, "/inputs", "Grad", op.in("Grad"), param->shape, "Param's shape")) return e;
    if (auto e = requireDims(op, "/outputs", "ParamOut", op.out("ParamOut"), param->shape, "Param's shape")) return e;
  }
  const Var* lr = op.in("LearningRate");
  if (known(lr) && lr->numel() != 1)
    return fail(op, "/inputs/LearningRate/0", "LearningRate " + dimsText(lr->shape) + " should hold one element");
  return std::nullopt;
}

}  // namespace

std::optional<OpRuleError> checkOpRules(const Op& op) {
  if (auto e = checkSlots(op)) return e;
  const std::string_view t = op.type;
  if (t == "elementwise_add" || t == "elementwise_mul") return checkElementwise(op, false);
  if (t == "elementwise_add_grad" || t == "elementwise_mul_grad") return checkElementwise(op, true);
  if (t == "reshape2") return checkReshape(op);
  if (t == "transpose2") return checkTranspose(op);
  if (t == "gelu" || t == "relu" || t == "softmax") return checkUnary(op);
  if (t == "layer_norm" || t == "layer_norm_grad") return checkLayerNorm(op);
  if (t == "nop" || t == "depend") return checkNop(op);
  if (t == "gelu_grad" || t == "relu_grad" || t == "softmax_grad") return checkPointwiseGrad(op);
  if (t == "scale") return checkScale(op);
  if (t == "sum") return checkSum(op);
  if (t == "reduce_sum_grad" || t == "reduce_mean_grad" || t == "mean_grad") return checkReduceGrad(op);
  if (t == "reshape2_grad" || t == "transpose2_grad") return checkShapeGrad(op);
  if (t == "assign") return checkAssign(op);
  if (t == "fill_constant") return checkFillConstant(op);
  if (t == "reduce_sum" || t == "reduce_mean" || t == "mean") return checkReduce(op);
  if (t == "dropout" || t == "dropout_grad") return checkDropout(op);
  if (t == "sgd") return checkSgd(op);
  if (t == "matmul_v2_grad") return checkMatmulGrad(op);
  return std::nullopt;
}

}  // namespace spopt
