#!/usr/bin/env bash
# Benchmark of the regather-activations pass on generated jobs of ~100k and ~1M ops (sequence-
# parallel MLP, tp 4: gen mlp --batch 2 --seq 64 --hidden 64). For each job and each mode
# (always, auto) it runs `rewrite --dry-run --passes regather-activations{mode=M} --report` and
# takes the pass's own time from the report (load and verification excluded). Prints a markdown
# table: ops, re-gathers, pass ms, ns per op. A linear pass shows a flat ns/op.
#
# Usage: scripts/bench-regather.sh [SP_OPT] [TARGET_OPS...]   (defaults: build/sp-opt, "100000 1000000")
#   SPOPT_BENCH_REPEAT=N keeps the fastest of N runs (default 3). Not part of ctest.
set -euo pipefail
SP_OPT=${1:-build/sp-opt}
shift || true
TARGETS=${*:-100000 1000000}
REPEAT=${SPOPT_BENCH_REPEAT:-3}
WORK=$(mktemp -d /tmp/bench-regather.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

gen() { "$SP_OPT" gen mlp --tp 4 --layers "$1" --batch 2 --seq 64 --hidden 64 --sequence-parallel -o "$2" > /dev/null; }
count_ops() { "$SP_OPT" validate "$1" | sed -E 's/.*, ([0-9]+) ops\)$/\1/'; }
gen 1 "$WORK/l1.json"
gen 2 "$WORK/l2.json"
ops1=$(count_ops "$WORK/l1.json")
per_layer=$(($(count_ops "$WORK/l2.json") - ops1))
base=$((ops1 - per_layer))

echo "regather-activations: sequence-parallel MLP, tp 4, batch 2, seq 64, hidden 64 ($per_layer ops per layer, best of $REPEAT)"
echo
echo "| ops | mode | re-gathers | pass ms | ns / op |"
echo "| ---: | --- | ---: | ---: | ---: |"
for target in $TARGETS; do
  layers=$(((target - base + per_layer - 1) / per_layer))
  [ "$layers" -ge 1 ] || layers=1
  job=$WORK/job_$target.json
  gen "$layers" "$job"
  ops=$(count_ops "$job")
  for mode in always auto; do
    best=""
    for _ in $(seq "$REPEAT"); do
      "$SP_OPT" rewrite "$job" "$WORK/out.json" --dry-run --passes "regather-activations{mode=$mode}" --report "$WORK/r.json" > /dev/null
      read -r ms n < <(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['passes'][0]; print(p['time_ms'], p['rewritten'])" "$WORK/r.json")
      if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $ms < $best else 1)"; then best=$ms; fi
    done
    python3 -c "import sys; ops,ms=int(sys.argv[1]),float(sys.argv[2]); print(f'| {ops} | $mode | $n | {ms:.1f} | {ms*1e6/ops:.0f} |')" "$ops" "$best"
  done
  rm -f "$job"
done
