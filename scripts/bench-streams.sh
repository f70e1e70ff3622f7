#!/bin/bash
# Comm streams on a CPU: wall time per training step of a generated GPT job replayed with a
# modelled network (--link), its backward collectives on one comm stream per ring (assigned by
# tests/scripts/assign_streams.py --mode backward, no op reordered) against the same job on one
# stream. Median of REPS runs each, interleaved; `check --rtol 0 --atol 0` proves the streamed
# replay bitwise equal. Prints a markdown table.
# Usage: scripts/bench-streams.sh [SP_OPT]  (env: TP DP LAYERS BATCH SEQ HIDDEN HEADS LINK REPS)
set -euo pipefail
SP_OPT=${1:-build/sp-opt}
SRC=$(cd "$(dirname "$0")/.." && pwd)
TP=${TP:-2} DP=${DP:-1} LAYERS=${LAYERS:-2} BATCH=${BATCH:-2} SEQ=${SEQ:-128} HIDDEN=${HIDDEN:-256} HEADS=${HEADS:-4}
LINK=${LINK:-1,50} REPS=${REPS:-5}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gen="gen gpt --tp $TP --dp $DP --sequence-parallel --layers $LAYERS --batch $BATCH --seq $SEQ --hidden $HIDDEN --heads $HEADS --dropout 0"
# shellcheck disable=SC2086
"$SP_OPT" $gen -o "$tmp/job.json" > /dev/null
assigned=$(python3 "$SRC/tests/scripts/assign_streams.py" "$tmp/job.json" "$tmp/streamed.json" --mode backward)
"$SP_OPT" check "$tmp/job.json" "$tmp/streamed.json" --rtol 0 --atol 0 --link "$LINK" > "$tmp/check.txt"

# The executor's time of the slowest rank (ranks run concurrently), in ms.
step_ms() { awk '$1 == "rank" && $4 == "ms" {if ($3 > m) m = $3} END {print m}' "$1"; }
: > "$tmp/single.txt"; : > "$tmp/streams.txt"; : > "$tmp/nolink.txt"
for rep in $(seq "$REPS"); do
  "$SP_OPT" replay "$tmp/job.json" --link "$LINK" > "$tmp/out.txt"; step_ms "$tmp/out.txt" >> "$tmp/single.txt"
  "$SP_OPT" replay "$tmp/streamed.json" --link "$LINK" --trace "$tmp/trace.json" > "$tmp/out.txt"; step_ms "$tmp/out.txt" >> "$tmp/streams.txt"
  "$SP_OPT" replay "$tmp/job.json" > "$tmp/out.txt"; step_ms "$tmp/out.txt" >> "$tmp/nolink.txt"
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
single=$(median "$tmp/single.txt") streams=$(median "$tmp/streams.txt") nolink=$(median "$tmp/nolink.txt")

python3 - "$tmp/trace.json" "$tmp/streamed.json" <<'PY' > "$tmp/overlap.txt"
import json, sys
t = json.load(open(sys.argv[1]))
ev = [e for e in t['traceEvents'] if e['ph'] == 'X']
# Per rank: collective time on comm tracks, and how much of it some compute op of the rank covered.
total = covered = 0.0
for pid in sorted({e['pid'] for e in ev}):
    comp = sorted((e['ts'], e['ts'] + e['dur']) for e in ev if e['pid'] == pid and e['tid'] == pid)
    for c in (e for e in ev if e['pid'] == pid and e['tid'] != pid and e.get('cat') == 'collective'):
        a, b = c['ts'], c['ts'] + c['dur']
        total += b - a
        covered += sum(max(0.0, min(b, y) - max(a, x)) for x, y in comp if x < b and y > a)
job = json.load(open(sys.argv[2]))
print(f"{total / 1e3:.1f} {covered / 1e3:.1f} {100 * covered / total if total else 0:.0f}")
PY
read -r comm_ms covered_ms covered_pct < "$tmp/overlap.txt"
echo "job: sp-opt $gen; link $LINK (GB/s, µs); $assigned; $(cat "$tmp/check.txt")"
echo "host: $(nproc) cores; median of $REPS runs; step = executor time of the slowest rank"
echo
echo "| replay | step ms (median) | vs one stream |"
echo "| --- | ---: | ---: |"
echo "| one stream, no link | $nolink | |"
echo "| one stream, --link $LINK | $single | 1.00 |"
echo "| backward collectives on comm streams, --link $LINK | $streams | $(echo "scale=2; $streams / $single" | bc -l) |"
echo
echo "Trace of the last streamed run: $comm_ms ms of collectives on comm tracks (all ranks), $covered_ms ms ($covered_pct%) of it under a compute op of the same rank."
