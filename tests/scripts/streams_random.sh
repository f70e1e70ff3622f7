#!/bin/bash
# Deadlock-freedom and bitwise numerics of the multi-stream replay (local backend), on randomized
# generated jobs: mlp and gpt, both dialects, tp 2 x dp 2 (so 4 rings per job: two tp, two dp),
# with or without sequence parallelism; assign_streams.py puts some rings' collectives on comm
# streams (one per ring) and adds random explicit event dependencies. Every replay is bounded by
# --timeout and by timeout(1): a hang fails the test. `check --rtol 0 --atol 0` between the
# single-stream job and the streamed one must pass (bitwise equal); so must the default chain's
# output (overlap-collectives: a comm stream per ring, reordered backward and updates).
# Env: STREAMS_JOBS (default 8), STREAMS_SEED (default: random; printed to rerun a failure).
set -u
SP_OPT=$1 SRC=$2
N=${STREAMS_JOBS:-8}
SEED=${STREAMS_SEED:-$RANDOM}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "streams_random: $N jobs, seed $SEED (STREAMS_SEED=$SEED to rerun)"
RANDOM=$SEED
fail=0 rings=0 streams=0 events=0 hangs=0 pass_rings=0
for k in $(seq "$N"); do
  model=$([ $((RANDOM % 2)) = 0 ] && echo mlp || echo gpt)
  dialect=$([ $((RANDOM % 2)) = 0 ] && echo legacy || echo current)
  sp=$([ $((RANDOM % 2)) = 0 ] && echo --sequence-parallel || echo)
  layers=$((1 + RANDOM % 2))
  args="gen $model --tp 2 --dp 2 --layers $layers --batch 2 --seq 8 --hidden 16 --heads 2 --dropout 0 --dialect $dialect $sp"
  # shellcheck disable=SC2086
  "$SP_OPT" $args -o "$tmp/job.json" > /dev/null || { echo "FAIL: $args"; fail=1; continue; }
  stats=$(python3 "$SRC/tests/scripts/assign_streams.py" "$tmp/job.json" "$tmp/streamed.json" --mode random --seed $((SEED + k)))
  set -- $stats; rings=$((rings + $2)) streams=$((streams + $4)) events=$((events + $6))
  # And the pass's own output: the default chain (fuse, regather, overlap: comm stream per ring,
  # reordered backward with the updates in it), checked bitwise against the input.
  "$SP_OPT" rewrite "$tmp/job.json" "$tmp/pass.json" > /dev/null || { echo "FAIL: rewrite ($args)"; fail=1; continue; }
  pass_streams=$(grep -o '"execution_stream": *"comm_ring_[0-9]*"' "$tmp/pass.json" | sort -u | wc -l)
  [ "$pass_streams" -ge 2 ] || { echo "FAIL ($args): the pass put $pass_streams rings on comm streams"; fail=1; }
  pass_rings=$((pass_rings + pass_streams))
  # What replays to the end must be valid: the hang check has no false alarm on random streams and events.
  for j in streamed pass; do
    "$SP_OPT" validate "$tmp/$j.json" > /dev/null 2> "$tmp/err" || { echo "FAIL ($args; $stats): validate $j: $(head -2 "$tmp/err")"; fail=1; }
  done
  for run in "check $tmp/job.json $tmp/streamed.json" "check $tmp/job.json $tmp/pass.json"; do
    # shellcheck disable=SC2086
    out=$(timeout 60 "$SP_OPT" $run --rtol 0 --atol 0 --timeout 20 2>&1); rc=$?
    [ $rc = 124 ] && hangs=$((hangs + 1))
    if [ $rc != 0 ] || ! echo "$out" | grep -q "^check: ok"; then
      echo "FAIL ($args; $stats; $run): exit $rc: $out"; fail=1
    fi
  done
done

# A would-be deadlock is a bounded error naming rank, stream and op: two rings over ranks {0,1}
# whose all-reduces rank 1 issues in the opposite order (crossed_rings.py). One stream per rank
# (default or a named one): exit 2 after --timeout. A stream per ring: runs, as NCCL would.
for spec in "default default" "comm comm"; do
  python3 "$SRC/tests/scripts/crossed_rings.py" "$tmp/crossed.json" $spec
  out=$(timeout 30 "$SP_OPT" replay "$tmp/crossed.json" --timeout 1 2>&1); rc=$?
  [ $rc = 124 ] && hangs=$((hangs + 1))
  # Whichever rank's timeout fires first is reported.
  want="c_allreduce_sum \(rank [01], block 0, op 0\)$([ "${spec%% *}" = comm ] && echo " on stream 'comm'"): timed out after 1.000 s waiting on ring [01]"
  [ $rc = 2 ] && echo "$out" | grep -qE "$want" || { echo "FAIL: crossed rings on streams '$spec': exit $rc: $out"; fail=1; }
  # ... and validate finds it before the run.
  "$SP_OPT" validate "$tmp/crossed.json" 2>&1 | grep -q ": hang: 4 ops on 2 rank(s) form a cycle of waits" || { echo "FAIL: validate misses crossed rings on '$spec'"; fail=1; }
done
python3 "$SRC/tests/scripts/crossed_rings.py" "$tmp/crossed.json" comm0 comm1
timeout 30 "$SP_OPT" replay "$tmp/crossed.json" --timeout 5 > /dev/null 2>&1 || { echo "FAIL: crossed rings on a stream each"; fail=1; }
"$SP_OPT" validate "$tmp/crossed.json" > /dev/null 2>&1 || { echo "FAIL: validate: crossed rings on a stream each"; fail=1; }
# A kernel failing on a comm stream stops its rank's other streams and the other ranks at once.
python3 - "$SRC/testdata/jobs/bad_rank1_kernel_fails.json" "$tmp/fails.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
for p in job['programs']:
    for op in p['blocks'][0]['ops']:
        if op['type'] == 'reshape2': op.setdefault('dist_attr', {})['execution_stream'] = 'side'
json.dump(job, open(sys.argv[2], 'w'))
PY
start=$(date +%s)
out=$(timeout 30 "$SP_OPT" replay "$tmp/fails.json" --timeout 20 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "op 'reshape2' (rank 1, block 0, op 2)" && [ $(($(date +%s) - start)) -lt 10 ] ||
  { echo "FAIL: a kernel failing on a side stream: exit $rc after $(($(date +%s) - start)) s: $out"; fail=1; }

echo "streams_random: $N jobs, $rings rings, $streams (rank, comm stream) pairs, $events explicit events; the pass's outputs: $pass_rings comm streams; $hangs hangs"
[ $fail = 0 ] && echo "streams_random: all ok"
exit $fail
