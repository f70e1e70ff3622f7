#include "ops/shape_math.h"

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
std::string typeText(const Var& v) { return std::string(dtypeName(v.dtype)) + dimsText(v.shape); }

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

std::optional<ShapeDims> resolveUnsqueeze(const ShapeDims& x, const ShapeDims& axes, std::string* why) {
  ShapeDims out = x;
  for (int64_t axis : axes) {
    int64_t rank = int64_t(out.size());
    int64_t at = axis < 0 ? axis + rank + 1 : axis;
    if (at < 0 || at > rank) {
      if (why) *why = "axis " + std::to_string(axis) + " is out of range for inserting into rank " + std::to_string(rank);
      return std::nullopt;
    }
    out.insert(out.begin() + at, 1);
  }
  return out;
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

std::optional<int64_t> paddleDtypeCode(DType t) {
  for (int64_t code : {0, 2, 3, 4, 5, 6, 20, 22})
    if (dtypeFromPaddleCode(code) == t) return code;
  return std::nullopt;
}

std::optional<DType> dtypeFromAttr(std::string_view raw) {
  if (rawIsString(raw)) {
    std::optional<std::string> name = rawToString(raw);
    if (!name) return std::nullopt;
    std::string_view n = *name;
    if (n.substr(0, 7) == "paddle.") n.remove_prefix(7);
    return parseDType(n);
  }
  std::optional<int64_t> code = rawToIntLenient(raw);
  return code ? dtypeFromPaddleCode(*code) : std::nullopt;
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

}  // namespace spopt
