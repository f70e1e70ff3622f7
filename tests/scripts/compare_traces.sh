#!/usr/bin/env bash
# scripts/compare-traces.py takes a step apart the same way for a run and for a prediction:
#  - an analyze trace compared with itself gives measured = predicted in every column;
#  - a replay under an emulated link whose latency dwarfs everything else (--link 1000,30000: every
#    collective takes at least 30 ms after its last member arrived) puts that much per collective
#    in the link column, not more than a wake-up's slack: a rank that reached it first waited for
#    its peer, and that wait is its own column.
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
echo "PASS compare_traces"
