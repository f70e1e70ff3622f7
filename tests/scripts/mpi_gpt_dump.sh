#!/bin/bash
# Paddle's GPT training dump as a 2-rank data-parallel job (the same program on both ranks): its
# replay under mpirun prints a finite loss on each rank, and the default rewrite checks bitwise
# against it under mpirun. Exit 77 (skipped) when mpirun is absent or sp-opt was built without MPI,
# and in the sanitizer stage (SPOPT_SHORT_SWEEPS=1): there the same kernels replay this dump in
# golden/replay-gpt-dump and the mpi backend's memory is checked by the other mpi scripts.
set -u
SP_OPT=$1 SRC=$2
[ "${SPOPT_SHORT_SWEEPS:-0}" = 1 ] && { echo "skipped: short sweeps (sanitizer stage)"; exit 77; }
DUMP=$SRC/testdata/paddle/gpt_dp_hybrid_main_program.txt.1
command -v mpirun > /dev/null || { echo "skipped: mpirun not found"; exit 77; }
if "$SP_OPT" replay "$SRC/testdata/jobs/hand_tp2_legacy.json" --backend mpi 2>&1 | grep -q "not built"; then
  echo "skipped: sp-opt was built without the mpi backend"; exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$SP_OPT" import "$DUMP" "$DUMP" --ring 0=0,1 -o "$tmp/j.json" 2> /dev/null || bad "import of the 2-rank job"
"$SP_OPT" rewrite "$tmp/j.json" "$tmp/r.json" > /dev/null || bad "rewrite of the 2-rank job"
timeout 300 mpirun -n 2 --oversubscribe "$SP_OPT" replay "$tmp/j.json" --backend mpi > "$tmp/replay.txt" 2> "$tmp/replay.err" ||
  { cat "$tmp/replay.err"; bad "mpi replay"; }
# The loss (tmp_8) once per rank, a finite number.
losses=$(awk '$1 == "tmp_8" { print $7 }' "$tmp/replay.txt")
[ "$(echo "$losses" | grep -c .)" = 2 ] || bad "expected the loss of 2 ranks, got: $losses"
for l in $losses; do
  awk -v l="$l" 'BEGIN { exit !(l + 0 == l && l > 0 && l < 100) }' || bad "loss $l is not a finite positive number"
done
timeout 300 mpirun -n 2 --oversubscribe "$SP_OPT" check "$tmp/j.json" "$tmp/r.json" --backend mpi --rtol 0 --atol 0 \
  > "$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt"; bad "mpi check of the rewritten job"; }
grep -q "check: ok: 386 vars on 2 ranks, rtol 0 atol 0" "$tmp/check.txt" || { cat "$tmp/check.txt"; bad "check did not report 386 bitwise-equal vars"; }
[ $fail = 0 ] && echo "ok: GPT dump on 2 ranks under mpirun: loss $(echo $losses), rewrite bitwise equal"
exit $fail
