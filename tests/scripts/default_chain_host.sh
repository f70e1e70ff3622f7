#!/bin/bash
# The default chain scheduled for this machine, end to end, as a user runs it: `rewrite --preset
# host --link 0.1,100` on a job whose forward communication the model says is worth cutting. With
# a fixed calibration (SPOPT_HOST_CALIBRATION: the figures of an idle 2-core machine, so that the
# schedule does not depend on the load of the machine the test runs on), the chain must cut the
# forward's collectives (decompose-collective-matmul in the default pipeline, both passes taking
# the flags' preset and link), stay valid and hang-free, replay to the fuse-only job's results
# within check's tolerance, and be predicted faster than the chain without the decomposition by
# `analyze --preset host --link 0.1,100`, as the pass's own estimate said.
set -u
SP_OPT=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/cal.json" <<'CAL'
{"sgemm_mflops_by_n": {"32": 40978, "64": 88390, "128": 98649, "256": 103434, "512": 105804}, "dgemm_flops": 47770000000.0, "copy_bw": 24260000000.0, "op_overhead_s": 3e-06, "wake_s": 8.85e-05, "cores": 2, "ranks": 2}
CAL
export SPOPT_HOST_CALIBRATION=$tmp/cal.json
fail() { echo "FAIL: $*"; exit 1; }
"$SP_OPT" gen gpt --tp 2 --layers 2 --hidden 256 --heads 4 --seq 256 --batch 2 --sequence-parallel -o "$tmp/in.json" > /dev/null || fail gen
"$SP_OPT" rewrite "$tmp/in.json" "$tmp/fuse.json" --passes=fuse-allreduce-split || fail "rewrite fuse"
stats=$("$SP_OPT" rewrite "$tmp/in.json" "$tmp/chain.json" --preset host --link 0.1,100 --stats 2>&1) || fail "rewrite: $stats"
echo "$stats" | grep -q "decompose-collective-matmul{preset=host,link=0.1,100}:" || fail "decompose did not take the flags: $stats"
echo "$stats" | grep -q "overlap-collectives{preset=host,link=0.1,100}:" || fail "overlap did not take the flags: $stats"
echo "$stats" | grep -Eq "figure decomposed-(all-gathers|reduce-scatters): [1-9]" || fail "nothing decomposed: $stats"
"$SP_OPT" rewrite "$tmp/in.json" "$tmp/bwd.json" --preset host --link 0.1,100 \
  --passes=fuse-allreduce-split,regather-activations,overlap-collectives || fail "rewrite without decompose"
"$SP_OPT" validate --strict "$tmp/chain.json" > /dev/null || fail "validate --strict"
"$SP_OPT" check "$tmp/fuse.json" "$tmp/chain.json" > "$tmp/check.txt" 2>&1 || { cat "$tmp/check.txt"; fail "check fuse vs chain"; }
step() { "$SP_OPT" analyze "$1" --preset host --link 0.1,100 --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"]["step_s"])'; }
chain=$(step "$tmp/chain.json") bwd=$(step "$tmp/bwd.json")
python3 -c "import sys; sys.exit(0 if $chain < $bwd else 1)" || fail "predicted step with decompose $chain s, without $bwd s"
echo "ok: $(grep -o 'figure decomposed-[a-z-]*: [0-9]*' <<< "$stats" | tr '\n' ' ')predicted step $bwd -> $chain s; $(tail -1 "$tmp/check.txt")"
