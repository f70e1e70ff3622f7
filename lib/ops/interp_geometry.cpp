#include "ops/interp_geometry.h"

namespace spopt {

namespace {

bool pairOf(const std::vector<int64_t>& v, const char* name, std::string* why) {
  if (v.size() == 2) return true;
  *why = std::string(name) + " should hold 2 values (h, w), has " + std::to_string(v.size());
  return false;
}

// Paddle: new_scale = 1 / scale when a scale is given, else in / out; align_corners: (in - 1) / (out - 1).
float ratioOf(int64_t in, int64_t out, float scale, bool align_corners) {
  if (out <= 1) return 0.f;
  if (align_corners) return float(in - 1) / float(out - 1);
  return scale > 0 ? float(1. / double(scale)) : float(in) / float(out);
}

}  // namespace

std::optional<Interp2d> resolveNearest2d(int64_t in_h, int64_t in_w, const InterpSources& s, bool align_corners,
                                         std::string* why) {
  int64_t out_h = s.out_h, out_w = s.out_w;
  float scale_h = -1.f, scale_w = -1.f;
  if (s.size_tensor) {
    if (!pairOf(*s.size_tensor, "SizeTensor", why)) return std::nullopt;
    out_h = (*s.size_tensor)[0];
    out_w = (*s.size_tensor)[1];
  } else {
    if (s.scale_from_tensor && !s.scale.empty()) {
      scale_h = float(s.scale[0]);
      scale_w = float(s.scale.size() > 1 ? s.scale[1] : s.scale[0]);
    } else if (s.scale.size() > 1) {
      scale_h = float(s.scale[0]);
      scale_w = float(s.scale[1]);
    }
    if ((s.scale_from_tensor || s.scale.size() > 1) && !(scale_h > 0 && scale_w > 0)) {
      *why = "scale " + std::to_string(scale_h) + ", " + std::to_string(scale_w) + " should be positive";
      return std::nullopt;
    }
    if (scale_h > 0 && scale_w > 0) {
      out_h = int64_t(float(in_h) * scale_h);
      out_w = int64_t(float(in_w) * scale_w);
    }
    if (s.out_size) {
      if (!pairOf(*s.out_size, "OutSize", why)) return std::nullopt;
      out_h = (*s.out_size)[0];
      out_w = (*s.out_size)[1];
    }
  }
  if (out_h < 1 || out_w < 1 || in_h < 1 || in_w < 1) {
    *why = "the output " + std::to_string(out_h) + " x " + std::to_string(out_w) + " of the input " + std::to_string(in_h) +
           " x " + std::to_string(in_w) + " should be positive (set out_h / out_w, scale, OutSize or SizeTensor)";
    return std::nullopt;
  }
  Interp2d r;
  r.h = {in_h, out_h, ratioOf(in_h, out_h, scale_h, align_corners)};
  r.w = {in_w, out_w, ratioOf(in_w, out_w, scale_w, align_corners)};
  return r;
}

}  // namespace spopt
