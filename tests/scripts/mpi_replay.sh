#!/bin/bash
# The mpi backend under mpirun with 2 and 4 processes: its outputs must equal the local backend's
# BIT FOR BIT (both add the members' inputs in group order), check must agree, and a launch
# without mpirun or with the wrong -n, or a failing rank, must be a clean exit 2.
# Exit 77 (skipped) when mpirun is absent or sp-opt was built without MPI.
set -u
SP_OPT=$1 SRC=$2
JOBS=$SRC/testdata/jobs
command -v mpirun > /dev/null || { echo "skipped: mpirun not found"; exit 77; }
if "$SP_OPT" replay "$JOBS/hand_tp2_legacy.json" --backend mpi 2>&1 | grep -q "not built"; then
  echo "skipped: sp-opt was built without the mpi backend"; exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# resnet_block_dp2: conv/batch_norm/pool kernels and c_reduce_sum (gathered to the root over MPI).
# vocab_parallel_tp2(_pir): c_softmax_with_cross_entropy's kernel all-reduces over the MPI ring.
for spec in "2 hand_tp2_legacy.json" "2 hand_tp2_fused.json" "4 collectives_tp4.json" "2 resnet_block_dp2.sptxt" \
            "2 vocab_parallel_tp2.sptxt" "2 vocab_parallel_tp2_pir.sptxt"; do
  set -- $spec; n=$1 file=$2 job=${2%.*}
  "$SP_OPT" replay "$JOBS/$file" --dump "$tmp/$job.local" > "$tmp/$job.local.txt" || bad "local replay of $job"
  timeout 120 mpirun -n "$n" --oversubscribe "$SP_OPT" replay "$JOBS/$file" --backend mpi --dump "$tmp/$job.mpi" \
    > "$tmp/$job.mpi.txt" || bad "mpi replay of $job (-n $n)"
  # Bitwise: every dumped .npy identical, and the printed summaries (checksums) too.
  diff -r "$tmp/$job.local" "$tmp/$job.mpi" > /dev/null || bad "$job: local and mpi dumps differ"
  n_files=$(find "$tmp/$job.mpi" -name '*.npy' | wc -l)
  [ "$n_files" -gt 0 ] || bad "$job: mpi dump is empty"
  diff <(grep -v ' ms  peak' "$tmp/$job.local.txt" | sed 's/backend local/backend X/') \
       <(grep -v ' ms  peak' "$tmp/$job.mpi.txt" | sed 's/backend mpi/backend X/') || bad "$job: summaries differ"
  echo "ok: $job with $n processes: $n_files vars bitwise equal to the local backend"
done

# A Paddle 3 (PIR) program, Paddle's own fusion test at a small size: its ops replay under mpirun as
# locally, bit for bit, and the fused job checks against it under mpi.
PIR=$SRC/testdata/pir/fuse_pattern_small_2rank.json
"$SP_OPT" replay "$PIR" --dump "$tmp/pir.local" > /dev/null || bad "local replay of the PIR job"
timeout 120 mpirun -n 2 --oversubscribe "$SP_OPT" replay "$PIR" --backend mpi --dump "$tmp/pir.mpi" > /dev/null || bad "mpi replay of the PIR job"
diff -r "$tmp/pir.local" "$tmp/pir.mpi" > /dev/null || bad "PIR job: local and mpi dumps differ"
"$SP_OPT" rewrite "$PIR" "$tmp/pir.fused.json" > /dev/null || bad "rewrite of the PIR job"
timeout 120 mpirun -n 2 --oversubscribe "$SP_OPT" check "$PIR" "$tmp/pir.fused.json" --backend mpi --rtol 0 --atol 0 \
  > "$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt"; bad "mpi check of the fused PIR job"; }
grep -q "pd_op.reduce_scatter" <("$SP_OPT" print "$tmp/pir.fused.json") || bad "the PIR job was not fused"

timeout 120 mpirun -n 2 --oversubscribe "$SP_OPT" check "$JOBS/hand_tp2_legacy.json" "$JOBS/hand_tp2_fused.json" --backend mpi \
  > "$tmp/check.txt" 2>&1; rc=$?
[ $rc -eq 0 ] || { cat "$tmp/check.txt"; bad "mpi check of the correct fusion: exit $rc"; }
timeout 120 mpirun -n 2 --oversubscribe "$SP_OPT" check "$JOBS/hand_tp2_legacy.json" "$JOBS/hand_tp2_wrong_chunk.json" --backend mpi \
  > "$tmp/check.txt" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "check: FAILED" "$tmp/check.txt" || { cat "$tmp/check.txt"; bad "mpi check of the wrong chunk: exit $rc"; }

out=$("$SP_OPT" replay "$JOBS/hand_tp2_legacy.json" --backend mpi 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "alone in MPI_COMM_WORLD: start it with mpirun -n 2" || bad "no-mpirun launch: exit $rc: $out"
out=$(timeout 120 mpirun -n 3 --oversubscribe "$SP_OPT" replay "$JOBS/hand_tp2_legacy.json" --backend mpi 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "MPI_COMM_WORLD has 3 processes but the job's world_size is 2" || bad "mpirun -n 3: exit $rc: $out"
out=$(timeout 120 mpirun -n 2 --oversubscribe "$SP_OPT" replay "$JOBS/bad_rank1_kernel_fails.json" --backend mpi 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "op 'reshape2' (rank 1, block 0, op 2)" || bad "failing rank under mpi: exit $rc: $out"
# A rank that has not issued a collective is named: two rings over ranks {0,1} whose all-reduces
# rank 1 issues in the opposite order (crossed_rings.py), one stream per rank: each rank waits for
# the other at its first collective, and whichever times out first says who has not issued it.
python3 "$SRC/tests/scripts/crossed_rings.py" "$tmp/crossed.json" default default
out=$(timeout 60 mpirun -n 2 "$SP_OPT" replay "$tmp/crossed.json" --backend mpi --timeout 2 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -qE "timed out after 2.000 s on ring [01] collective #0: rank ([01]) issued it; rank [01] has not \(stopped, or still before it\)" &&
  ! echo "$out" | grep -qE "rank 0 issued it; rank 0 has|rank 1 issued it; rank 1 has" || bad "crossed rings under mpi: exit $rc: $out"
[ $fail -eq 0 ] && echo "mpi_replay: all ok"
exit $fail
