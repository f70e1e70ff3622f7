#pragma once
// The size and source-index arithmetic of nearest_interp (v2), shared by its rule
// (ops/upsample_ops.cpp) and replay's kernel (runtime/kernels/interp.cpp), as Paddle's 2-D CPU
// interpolation computes them: float32 ratios, truncating casts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spopt {

// Where the output size comes from, in Paddle's precedence: SizeTensor's [h, w]; else the scale
// (the Scale tensor's one or two values, else the `scale` attribute's two) times the input,
// truncated, with OutSize's [h, w] overriding the size but not the scale the ratio uses; else
// out_h / out_w.
struct InterpSources {
  std::optional<std::vector<int64_t>> size_tensor, out_size;
  std::vector<double> scale;        // as given: the Scale tensor's values or the attribute's
  bool scale_from_tensor = false;   // one value then scales both dims
  int64_t out_h = -1, out_w = -1;
};

// One spatial dim: input and output sizes, and the float32 ratio of Paddle's source index.
struct InterpAxis {
  int64_t in = 0, out = 0;
  float ratio = 0;
};

struct Interp2d {
  InterpAxis h, w;
};

// nullopt with `why` set when a size or scale is not positive or a list is not two values long.
std::optional<Interp2d> resolveNearest2d(int64_t in_h, int64_t in_w, const InterpSources& s, bool align_corners,
                                         std::string* why);

// The input position output position `o` reads: trunc(ratio * o), or rounded with align_corners,
// clamped to the input (Paddle's own arithmetic never leaves it for the sizes it computes).
inline int64_t nearestSource(const InterpAxis& a, int64_t o, bool align_corners) {
  float at = a.ratio * float(o);
  int64_t i = align_corners ? int64_t(double(at) + 0.5) : int64_t(at);
  return i < a.in ? i : a.in - 1;
}

}  // namespace spopt
