#!/usr/bin/env bash
# Measured effect of overlap-collectives on this machine: a CPU-sized sequence-parallel GPT job
# (tp 2) replayed on the local backend with streams (one thread per execution stream) and a
# simulated network (--link BW_GBPS,LATENCY_US: every collective takes at least latency + ring
# bytes / BW of wall time), before (fuse-allreduce-split only: every collective on the compute
# stream) and after (sequence-parallel: fuse + overlap-collectives). Runs alternate before/after,
# RUNS times each; prints the median and min of the slowest rank's replay time per step, and
# `sp-opt check` of the two jobs (bitwise on this backend). Not part of ctest.
#
# Usage: scripts/bench-overlap-replay.sh [SP_OPT] [RUNS] [LINK]   (defaults: build/sp-opt 5 0.2,100)
set -euo pipefail
SP_OPT=${1:-build/sp-opt}
RUNS=${2:-5}
LINK=${3:-0.2,100}
WORK=$(mktemp -d /tmp/bench-overlap-replay.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
GEN_ARGS="gpt --tp 2 --layers 2 --hidden 512 --heads 8 --seq 256 --batch 2 --sequence-parallel"
"$SP_OPT" gen $GEN_ARGS -o "$WORK/in.json" >/dev/null
"$SP_OPT" rewrite "$WORK/in.json" "$WORK/before.json" --passes=fuse-allreduce-split
"$SP_OPT" rewrite "$WORK/in.json" "$WORK/after.json" --passes=sequence-parallel
step_ms() {  # the slowest rank's "rank R  T ms" line of replay's time table
  "$SP_OPT" replay "$1" --link "$LINK" ${2:+--trace "$2"} 2>&1 | sed -nE 's/^  rank [0-9]+ +([0-9.]+) ms.*/\1/p' | sort -g | tail -1
}
before=() after=()
for _ in $(seq "$RUNS"); do
  before+=("$(step_ms "$WORK/before.json")")
  after+=("$(step_ms "$WORK/after.json")")
done
step_ms "$WORK/after.json" "${SPOPT_TRACE_OUT:-$WORK/trace.json}" >/dev/null
check=$("$SP_OPT" check "$WORK/before.json" "$WORK/after.json" 2>&1 | tail -1)
python3 - "$LINK" "$RUNS" "${before[*]}" "${after[*]}" "$check" "$GEN_ARGS" <<'PY'
import statistics, sys
link, runs, b, a, check, gen = sys.argv[1:]
b = [float(x) for x in b.split()]; a = [float(x) for x in a.split()]
print(f"replay --backend local --link {link}, gen {gen}, {runs} runs each (alternating)")
print()
print("| job | median ms per step | min ms | runs |")
print("| --- | ---: | ---: | --- |")
print(f"| fuse-allreduce-split | {statistics.median(b):.1f} | {min(b):.1f} | {' '.join(f'{x:.0f}' for x in b)} |")
print(f"| sequence-parallel (fuse + overlap) | {statistics.median(a):.1f} | {min(a):.1f} | {' '.join(f'{x:.0f}' for x in a)} |")
print()
print(f"speed-up (median): {statistics.median(b) / statistics.median(a):.2f}x; check: {check}")
PY
