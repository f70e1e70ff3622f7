#!/usr/bin/env bash
# scripts/compare-traces.py takes a step apart the same way for a run and for a prediction:
#  - an analyze trace compared with itself gives measured = predicted in every column;
#  - a replay under an emulated link whose latency dwarfs everything else (--link 1000,30000: every
#    collective takes at least 30 ms after its last member arrived) puts that much per collective
#    in the link column, not more than a wake-up's slack: a rank that reached it first waited for
#    its peer, and that wait is its own column;
#  - sends and receives carry their ring in analyze's trace as in replay's (both count them as the
#    link's).
# Usage: compare_traces.sh SP_OPT SOURCE_DIR
set -uo pipefail
sp_opt=$1
src=$2
job=$src/testdata/jobs/analyze_overlap_tp2.json
tool=$src/scripts/compare-traces.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL compare_traces: $*"; exit 1; }

"$sp_opt" analyze "$job" --trace "$work/a.json" -o /dev/null || fail "analyze --trace failed"
self=$(python3 "$tool" "$work/a.json" "$work/a.json" --summary) || fail "summary of the analyze trace failed"
read -r -a f <<< "$self"
[[ ${#f[@]} == 10 ]] || fail "summary has ${#f[@]} fields, not 10: $self"
[[ "${f[*]:0:5}" == "${f[*]:5:5}" ]] || fail "an analyze trace against itself differs: $self"
table=$(python3 "$tool" "$work/a.json" "$work/a.json") || fail "table of the analyze trace failed"
[[ $table == *"| c_allreduce_sum | 1 |"*"| 1.00 |"* ]] || fail "the collective's row is not 1 op at ratio 1.00: $table"

collectives=$(python3 -c 'import json,sys; print(sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e["pid"] == 0 and "ring" in e["args"]))' "$work/a.json")
[[ $collectives -ge 1 ]] || fail "the job has no collective on rank 0"
for i in 1 2; do
  "$sp_opt" replay "$job" --link 1000,30000 --trace "$work/r$i.json" > /dev/null 2>&1 || fail "replay --trace failed"
done
line=$(python3 "$tool" "$work/r1.json" "$work/r2.json" "$work/a.json" --summary) || fail "summary of the replay traces failed"
read -r -a m <<< "$line"
python3 - "$collectives" "${m[@]}" <<'PY' || fail "replay summary: $line"
import sys
n, (step, compute, link, wait, idle) = int(sys.argv[1]), map(float, sys.argv[2:7])
assert link >= 30.0 * n, f"link {link} ms < {n} x 30 ms"
assert link < 30.0 * n + 25, f"link {link} ms holds more than the emulated link's {n} x 30 ms"
assert step >= link, f"step {step} < link {link}"
PY
# Sends and receives are the link's in both traces: analyze's names their ring as replay's does,
# so the two take a decomposed job's step apart alike (gen gpt, the forward cut by
# decompose-collective-matmul{mode=always}).
"$sp_opt" gen gpt --tp 2 --layers 1 --hidden 32 --heads 4 --seq 16 --batch 2 --sequence-parallel -o "$work/g.json" > /dev/null ||
  fail "gen failed"
"$sp_opt" rewrite "$work/g.json" "$work/d.json" \
  --passes="fuse-allreduce-split,decompose-collective-matmul{mode=always}" || fail "decompose failed"
"$sp_opt" analyze "$work/d.json" --trace "$work/da.json" -o /dev/null || fail "analyze --trace of the decomposed job failed"
"$sp_opt" replay "$work/d.json" --trace "$work/dr.json" > /dev/null 2>&1 || fail "replay --trace of the decomposed job failed"
python3 - "$work/da.json" "$work/dr.json" <<'PY' || fail "a send or receive without its ring in a trace"
import json, sys
for path in sys.argv[1:]:
    p2p = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X" and e["name"] in ("send_v2", "recv_v2")]
    assert p2p, f"{path}: no send or receive"
    assert all("ring" in e["args"] for e in p2p), f"{path}: {[e['args'] for e in p2p if 'ring' not in e['args']][:2]}"
PY
# The link's time is the time it is busy: a ring exchange's send and receive run at once (the
# link's two directions) and count once, so a link-bound step is not shorter than its link.
"$sp_opt" analyze "$work/d.json" --link 0.01,10 --trace "$work/dl.json" -o /dev/null || fail "analyze --link of the decomposed job failed"
line=$(python3 "$tool" "$work/dl.json" "$work/dl.json" --summary) || fail "summary of the decomposed job failed"
read -r -a f <<< "$line"
python3 -c "import sys; step, link = map(float, sys.argv[1:3]); assert 0 < link <= step, (step, link)" "${f[0]}" "${f[2]}" ||
  fail "the decomposed job's link time exceeds its step: $line"
echo "PASS compare_traces"
