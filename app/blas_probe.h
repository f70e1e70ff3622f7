#pragma once
namespace spopt::app {
// Prints the BLAS library's core name (OpenBLAS) and the sgemm rate of this machine: the ceiling
// that scripts/bench-replay.sh compares replay's GFLOP/s with. Returns an exit code.
int printBlasProbe();
}  // namespace spopt::app
