#pragma once
// Measures this machine for the `host` hardware model (analysis/cost_model.h): the GEMM rates of
// the BLAS replay calls, a copy loop's memory bandwidth, and replay's fixed cost per op.
#include "analysis/cost_model.h"

namespace spopt::rt {

// The rates one rank gets while `ranks` ranks (threads, as replay's local backend runs them) work
// at once. About a second. Throws std::runtime_error when the BLAS cannot be opened.
HostMeasurement measureHost(int ranks);

}  // namespace spopt::rt
