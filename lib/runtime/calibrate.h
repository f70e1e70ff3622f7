#pragma once
// Measures this machine for the `host` hardware model (analysis/cost_model.h): the GEMM rates of
// the BLAS replay calls, a copy loop's memory bandwidth, and replay's fixed cost per op.
#include <string>

#include "analysis/cost_model.h"

namespace spopt::rt {

// The rates one rank gets while `ranks` ranks (threads, as replay's local backend runs them) work
// at once. About a second. Throws std::runtime_error when the BLAS cannot be opened.
HostMeasurement measureHost(int ranks);

// The figures as one JSON line ({"sgemm_mflops_by_n": {...}, "dgemm_flops", "copy_bw",
// "op_overhead_s", "cores", "ranks"}): what `analyze --calibrate` prints.
std::string hostMeasurementJson(const HostMeasurement& m);
// What the host model is built from: the figures in the file SPOPT_HOST_CALIBRATION names (that
// JSON line, measured with `ranks` ranks), else measureHost(ranks). A file lets a benchmark
// schedule (`preset=host`) and predict (`analyze --preset host`) with the same figures, measured
// once, instead of each command measuring a machine that others share. Throws InputError for a
// file that cannot be read or parsed, or that was measured with another rank count.
HostMeasurement hostFigures(int ranks);

}  // namespace spopt::rt
