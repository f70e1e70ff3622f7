#!/usr/bin/env bash
# Kernel micro-benchmark: the replay kernels of the vision (ResNet-50 shapes) and language (GPT
# shapes) jobs, best of N runs, as a markdown table: milliseconds, the achieved rate, and the bound
# each is held to, measured in the same binary: OpenBLAS GEMM alone on the kernel's own GEMM calls
# for GEMM-shaped kernels, the bytes the kernel must move at the bandwidth of STREAM's scale loop
# over 256 MiB (ordinary loads and stores, timed in turn with the kernel) for the rest; ratio = ms / bound ms (goal <= 2, marked **>2** past it). One OpenBLAS thread unless
# OPENBLAS_NUM_THREADS says otherwise.
#
# Usage: scripts/bench-kernels.sh [BUILD_DIR] [--batch N] [--tokens T] [--hidden H] [--seq S] [--vocab V]
#                                 [--reps N] [--only vision|language] [--dtype float32|float64] [--kernel NAME]
#   --kernel NAME keeps the rows whose kernel (with its note, e.g. "pool2d_grad max") contains NAME;
#   --digest 1 prints a hash of each kernel's outputs to stderr (a change that keeps the bits keeps it).
#   BUILD_DIR defaults to build; the target spopt-bench-kernels is built there (-j2) with
#   cmake --build, whatever the generator (Ninja, Makefiles). Not part of ctest.
set -euo pipefail
BUILD=build
if [[ $# -gt 0 && $1 != --* ]]; then
  BUILD=$1
  shift
fi
cmake --build "$BUILD" -j2 --target spopt-bench-kernels > /dev/null
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
"$BUILD/spopt-bench-kernels" "$@"
