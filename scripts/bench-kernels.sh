#!/usr/bin/env bash
# Kernel micro-benchmark: every hot replay kernel on transformer-sized tensors (best of N runs),
# printed as a markdown table: milliseconds and the rate (GFLOP/s for the GEMM, GB/s of tensor
# bytes read and written for the rest), with OpenBLAS's core name. One thread unless
# OPENBLAS_NUM_THREADS says otherwise. Shows where replay time outside GEMMs goes.
#
# Usage: scripts/bench-kernels.sh [BUILD_DIR] [--tokens T] [--hidden H] [--seq S] [--reps N] [--dtype float32|float64]
#   BUILD_DIR defaults to build; the target spopt-bench-kernels is built there (-j2).
#   Not part of ctest.
set -euo pipefail
BUILD=${1:-build}
shift || true
make -C "$BUILD" -j2 spopt-bench-kernels > /dev/null
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
"$BUILD/spopt-bench-kernels" "$@"
