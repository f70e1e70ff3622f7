#pragma once
// Measures this machine for the `host` hardware model (analysis/cost_model.h): the GEMM rates of
// the BLAS replay calls, a copy loop's memory bandwidth, and replay's fixed cost per op.
#include "analysis/cost_model.h"

namespace spopt::rt {

// About a second of measurement. Throws std::runtime_error when the BLAS cannot be opened.
HostMeasurement measureHost();

}  // namespace spopt::rt
