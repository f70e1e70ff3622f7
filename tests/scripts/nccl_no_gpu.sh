#!/usr/bin/env bash
# The nccl backend without a GPU: `replay` and `check` with --backend nccl exit 2 with one line
# naming "no CUDA device" and the CUDA error text, and write nothing. Skips (77) when the build has
# no nccl backend, and when a CUDA device IS present (then the refusal of a job with more ranks
# than GPUs is checked first, if this machine has fewer GPUs than the 4-rank job needs).
# Usage: nccl_no_gpu.sh SP_OPT SOURCE_DIR
set -u
sp_opt=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

job2=$src/testdata/jobs/hand_tp2_legacy.json
job4=$src/testdata/jobs/collectives_tp4.json

"$sp_opt" replay "$job4" --backend nccl --dump "$tmp/dump" >"$tmp/out" 2>"$tmp/err"
rc=$?
if grep -q "the nccl backend was not built" "$tmp/err"; then
  [ "$rc" = 2 ] || fail "a build without the nccl backend should exit 2, got $rc"
  grep -q "CUDA/NCCL not found at configure time" "$tmp/err" || fail "unexpected message: $(cat "$tmp/err")"
  echo "skipped: this build has no nccl backend (CUDA/NCCL not found at configure time)"
  exit 77
fi

if ! grep -q "no CUDA device" "$tmp/err"; then
  # A GPU is present: a 4-rank job on fewer GPUs must be refused cleanly, never run two ranks on one.
  if grep -q "CUDA device" "$tmp/err"; then
    [ "$rc" = 2 ] || fail "more ranks than GPUs should exit 2, got $rc"
    grep -q "Duplicate GPU detected" "$tmp/err" || fail "the refusal should explain NCCL's one-rank-per-GPU rule: $(cat "$tmp/err")"
    [ ! -e "$tmp/dump" ] || fail "a refused run wrote --dump output"
  fi
  echo "skipped: a CUDA device is present (rc $rc); the no-GPU path cannot be tested here"
  exit 77
fi

check_refusal() {  # $1: what ran
  [ "$rc" = 2 ] || fail "$1: expected exit 2, got $rc"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$1: expected one line on stderr, got: $(cat "$tmp/err")"
  grep -q "no CUDA device: cudaGetDeviceCount failed: ." "$tmp/err" || grep -q "no CUDA device: cudaGetDeviceCount found none" "$tmp/err" ||
    fail "$1: the line should carry the CUDA error text: $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$1: wrote to stdout: $(cat "$tmp/out")"
}
check_refusal "replay --backend nccl (4 ranks)"
[ ! -e "$tmp/dump" ] || fail "replay wrote --dump output"
echo "replay: $(cat "$tmp/err")"

"$sp_opt" replay "$job2" --backend nccl --trace "$tmp/trace.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
check_refusal "replay --backend nccl --trace (2 ranks)"
[ ! -e "$tmp/trace.json" ] || fail "replay wrote a trace"

"$sp_opt" check "$job2" "$src/testdata/jobs/hand_tp2_legacy.fused.json" --backend nccl >"$tmp/out" 2>"$tmp/err"
rc=$?
check_refusal "check --backend nccl"

"$sp_opt" check "$job2" "$job2" --backend local --backend-after nccl >"$tmp/out" 2>"$tmp/err"
rc=$?
check_refusal "check --backend local --backend-after nccl"

# Under mpirun (one process per GPU) every process refuses the same way.
if command -v mpirun >/dev/null; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    timeout 120 mpirun -n 2 "$sp_opt" replay "$job2" --backend nccl >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 2 ] || fail "mpirun -n 2 replay --backend nccl: expected exit 2, got $rc: $(cat "$tmp/err")"
  grep -q "no CUDA device: cudaGetDeviceCount" "$tmp/out" "$tmp/err" || fail "mpirun: no 'no CUDA device' line: $(cat "$tmp/err")"
fi

# The local backend still works in the same build (the nccl backend is linked in, not required).
"$sp_opt" replay "$job2" >"$tmp/out" 2>"$tmp/err" || fail "local replay failed: $(cat "$tmp/err")"
echo "ok: --backend nccl refuses cleanly without a GPU; local replay unaffected"
