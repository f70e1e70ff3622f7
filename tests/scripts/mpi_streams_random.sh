#!/bin/bash
# The multi-stream replay under mpirun (one process per rank, a thread per stream, MPI calls
# serialised): randomized generated jobs as in streams_random.sh (tp 2 x dp 2, 4 processes),
# comm streams per ring and random explicit events. `check --backend mpi --rtol 0 --atol 0`
# between the single-stream and the streamed job must pass, the streamed mpi replay's dumps must
# equal the single-stream local replay's bit for bit, the default chain's output (overlap-
# collectives) must check bitwise under mpi too, and nothing may hang (--timeout, timeout(1)).
# Exit 77 (skipped) when mpirun is absent or sp-opt was built without MPI.
set -u
SP_OPT=$1 SRC=$2
N=${STREAMS_JOBS:-3}
SEED=${STREAMS_SEED:-$RANDOM}
command -v mpirun > /dev/null || { echo "skipped: mpirun not found"; exit 77; }
if "$SP_OPT" replay "$SRC/testdata/jobs/hand_tp2_legacy.json" --backend mpi 2>&1 | grep -q "not built"; then
  echo "skipped: sp-opt was built without the mpi backend"; exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "mpi_streams_random: $N jobs, seed $SEED (STREAMS_SEED=$SEED to rerun)"
RANDOM=$SEED
fail=0 hangs=0 streams=0 pass_streams=0
for k in $(seq "$N"); do
  # RANDOM read in this shell: a command substitution's subshell reseeds it, and STREAMS_SEED
  # would not rerun the same jobs.
  models=(mlp gpt) dialects=(legacy current) sps=(--sequence-parallel "")
  model=${models[RANDOM % 2]} dialect=${dialects[RANDOM % 2]} sp=${sps[RANDOM % 2]}
  args="gen $model --tp 2 --dp 2 --layers 1 --batch 2 --seq 8 --hidden 16 --heads 2 --dropout 0 --dialect $dialect $sp"
  # shellcheck disable=SC2086
  "$SP_OPT" $args -o "$tmp/job.json" > /dev/null || { echo "FAIL: $args"; fail=1; continue; }
  stats=$(python3 "$SRC/tests/scripts/assign_streams.py" "$tmp/job.json" "$tmp/streamed.json" --mode random --seed $((SEED + k)))
  set -- $stats; streams=$((streams + $4))
  out=$(timeout 120 mpirun -n 4 --oversubscribe "$SP_OPT" check "$tmp/job.json" "$tmp/streamed.json" --backend mpi \
        --rtol 0 --atol 0 --timeout 30 2>&1); rc=$?
  [ $rc = 124 ] && hangs=$((hangs + 1))
  [ $rc = 0 ] && echo "$out" | grep -q "^check: ok" || { echo "FAIL ($args; $stats): mpi check exit $rc: $out"; fail=1; }
  # The default chain's output (overlap-collectives' comm streams and schedule) under mpi.
  "$SP_OPT" rewrite "$tmp/job.json" "$tmp/pass.json" > /dev/null || { echo "FAIL: rewrite ($args)"; fail=1; continue; }
  pass_streams=$((pass_streams + $(grep -o '"execution_stream": *"comm_ring_[0-9]*"' "$tmp/pass.json" | sort -u | wc -l)))
  out=$(timeout 120 mpirun -n 4 --oversubscribe "$SP_OPT" check "$tmp/job.json" "$tmp/pass.json" --backend mpi \
        --rtol 0 --atol 0 --timeout 30 2>&1); rc=$?
  [ $rc = 124 ] && hangs=$((hangs + 1))
  [ $rc = 0 ] && echo "$out" | grep -q "^check: ok" || { echo "FAIL ($args): mpi check of the pass's output exit $rc: $out"; fail=1; }
  rm -rf "$tmp/local" "$tmp/mpi"
  "$SP_OPT" replay "$tmp/job.json" --dump "$tmp/local" > /dev/null || { echo "FAIL: local replay ($args)"; fail=1; }
  timeout 120 mpirun -n 4 --oversubscribe "$SP_OPT" replay "$tmp/streamed.json" --backend mpi --timeout 30 --dump "$tmp/mpi" \
    > /dev/null 2>&1; rc=$?
  [ $rc = 124 ] && hangs=$((hangs + 1))
  [ $rc = 0 ] && diff -r "$tmp/local" "$tmp/mpi" > /dev/null || { echo "FAIL ($args; $stats): streamed mpi dumps differ (exit $rc)"; fail=1; }
done
echo "mpi_streams_random: $N jobs x 4 processes, $streams (rank, comm stream) pairs; the pass's outputs: $pass_streams comm streams; $hangs hangs"
[ $fail = 0 ] && echo "mpi_streams_random: all ok"
exit $fail
