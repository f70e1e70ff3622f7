#!/usr/bin/env bash
# Benchmark of the overlap-collectives pass alone: generated sequence-parallel GPT jobs (tp 4) of
# ~100k and ~1M ops in total, fused first (fuse-allreduce-split), then rewritten with
# --passes=overlap-collectives. The pass's own time comes from --report (time_ms), so load, verify
# and write are not counted; per-op time = pass time / ops. A near-linear pass shows a flat
# per-op time. Prints a markdown table.
#
# Usage: scripts/bench-overlap.sh [SP_OPT] [TARGET_OPS...]   (default build/sp-opt, "100000 1000000")
#   SPOPT_BENCH_REPEAT=N: fastest of N runs (default 3). Not part of ctest. Needs python3.
set -euo pipefail
SP_OPT=${1:-build/sp-opt}
shift || true
TARGETS=${*:-100000 1000000}
REPEAT=${SPOPT_BENCH_REPEAT:-3}
WORK=$(mktemp -d /tmp/bench-overlap.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
"$SP_OPT" gen --help >/dev/null 2>&1 || { echo "bench-overlap: no gen subcommand" >&2; exit 77; }

gen() { "$SP_OPT" gen gpt --tp 4 --layers "$1" --batch 1 --seq 16 --hidden 32 --heads 4 --sequence-parallel -o "$2" >/dev/null; }
count_ops() { "$SP_OPT" validate "$1" | sed -E 's/.*, ([0-9]+) ops\)$/\1/'; }
gen 1 "$WORK/l1.json"; gen 2 "$WORK/l2.json"
ops1=$(count_ops "$WORK/l1.json"); ops2=$(count_ops "$WORK/l2.json")
per_layer=$((ops2 - ops1)); base=$((ops1 - per_layer))

echo "overlap-collectives alone on fused sequence-parallel GPT jobs (tp 4, $per_layer ops per layer, fastest of $REPEAT)"
echo
echo "| ops | layers | pass ms | ns per op | collectives | hidden | matmul grads split | verify-after ms |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for target in $TARGETS; do
  layers=$(( (target - base + per_layer - 1) / per_layer )); [ "$layers" -ge 1 ] || layers=1
  gen "$layers" "$WORK/in.json"
  "$SP_OPT" rewrite "$WORK/in.json" "$WORK/fused.json" --passes=fuse-allreduce-split >/dev/null
  ops=$(count_ops "$WORK/fused.json")
  best=""
  for _ in $(seq "$REPEAT"); do
    "$SP_OPT" rewrite "$WORK/fused.json" "$WORK/out.json" --passes=overlap-collectives --report "$WORK/rep.json" >/dev/null
    line=$(python3 - "$WORK/rep.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["passes"][0]
print(p["time_ms"], p["candidates"], p["rewritten"], p["notes"].get("matmul-grad-split", 0), p["verify_ms"])
PY
)
    set -- $line
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $1 < ${best%% *} else 1)"; then best=$line; fi
  done
  set -- $best
  python3 -c "print('| %d | %d | %.1f | %.0f | %s | %s | %s | %.1f |' % ($ops, $layers, $1, $1 * 1e6 / $ops, '$2', '$3', '$4', $5))"
done
