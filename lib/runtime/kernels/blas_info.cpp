#include "runtime/kernels/blas_info.h"

extern "C" char* openblas_get_corename();

namespace spopt::rt {
std::string blasCoreName() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}
}  // namespace spopt::rt
