#!/usr/bin/env bash
# Benchmark of `sp-opt rewrite`: jobs from ~10k to ~1M ops in total (sequence-parallel MLP, tp 4),
# each rewritten with the full default pipeline and with the empty pipeline (`--passes=`: load,
# verify, write only). Prints a markdown table: ops, file MB, seconds for both, their ratio,
# ops/s of the full rewrite, peak RSS, and from --report the passes' own time and the time of the
# verifier run after each pass (the empty pipeline runs no pass, so no verifier after one either:
# the ratio includes one extra verification). Linear passes show a constant ops/s.
#
# Usage: scripts/bench-rewrite.sh [SP_OPT] [TARGET_OPS...]
#   SP_OPT defaults to build/sp-opt; TARGET_OPS to "10000 30000 100000 300000 1000000".
#   SPOPT_BENCH_GEN=path uses another binary for `sp-opt gen` (e.g. while gen lives on a branch).
#   SPOPT_BENCH_REPEAT=N runs each rewrite N times and keeps the fastest (default 3).
#   Not part of ctest. Needs /usr/bin/time (GNU time) and python3.
set -euo pipefail

SP_OPT=${1:-build/sp-opt}
shift || true
TARGETS=${*:-10000 30000 100000 300000 1000000}
GEN=${SPOPT_BENCH_GEN:-$SP_OPT}
REPEAT=${SPOPT_BENCH_REPEAT:-3}
WORK=$(mktemp -d /tmp/bench-rewrite.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if ! "$GEN" gen --help >/dev/null 2>&1; then
  echo "bench-rewrite: '$GEN' has no 'gen' subcommand; set SPOPT_BENCH_GEN to a binary that has" >&2
  exit 77
fi

gen() {  # gen LAYERS FILE
  "$GEN" gen mlp --tp 4 --layers "$1" --batch 2 --seq 64 --hidden 64 --sequence-parallel -o "$2"
}
count_ops() {  # ops in a job, from `validate`: "FILE: valid (R ranks, N ops)"
  "$SP_OPT" validate "$1" | sed -E 's/.*, ([0-9]+) ops\)$/\1/'
}

# ops = base + per_layer * layers: measured from two small jobs.
gen 1 "$WORK/l1.json" >/dev/null
gen 2 "$WORK/l2.json" >/dev/null
ops1=$(count_ops "$WORK/l1.json")
ops2=$(count_ops "$WORK/l2.json")
per_layer=$((ops2 - ops1))
base=$((ops1 - per_layer))

# run LABEL FILE ARGS...: fastest of $REPEAT runs; sets SECS and RSS_KB (peak over the runs).
run() {
  local file=$1
  shift
  SECS=""
  RSS_KB=0
  for _ in $(seq "$REPEAT"); do
    /usr/bin/time -v -o "$WORK/time.txt" "$SP_OPT" rewrite "$file" "$WORK/out.json" "$@" >/dev/null 2>"$WORK/err.txt" || {
      echo "bench-rewrite: rewrite failed:" >&2
      cat "$WORK/err.txt" >&2
      exit 1
    }
    local wall rss
    wall=$(python3 - "$WORK/time.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1).split(":")
print(sum(float(x) * 60 ** i for i, x in enumerate(reversed(m))))
PY
)
    rss=$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$WORK/time.txt")
    if [ -z "$SECS" ] || python3 -c "import sys; sys.exit(0 if $wall < $SECS else 1)"; then SECS=$wall; fi
    if [ "$rss" -gt "$RSS_KB" ]; then RSS_KB=$rss; fi
  done
}

echo "sp-opt rewrite: sequence-parallel MLP, tp 4, batch 2, seq 64, hidden 64 ($per_layer ops per layer, best of $REPEAT)"
echo
echo "| ops | file MB | rewrite s (full pipeline) | --passes= s | ratio | ops/s | peak RSS MB | passes ms | verify-after ms |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for target in $TARGETS; do
  layers=$(( (target - base + per_layer / 2) / per_layer ))
  [ "$layers" -ge 1 ] || layers=1
  file="$WORK/job.json"
  gen "$layers" "$file" >/dev/null
  ops=$(count_ops "$file")
  mb=$(python3 -c "import os; print(f'{os.path.getsize(\"$file\") / 1e6:.1f}')")
  run "$file" --report "$WORK/report.json"
  full=$SECS
  full_rss=$RSS_KB
  pass_ms=$(python3 -c "import json; r = json.load(open('$WORK/report.json')); print(f\"{sum(p['time_ms'] for p in r['passes']):.1f} | {sum(p['verify_ms'] for p in r['passes']):.1f}\")")
  run "$file" --passes=
  empty=$SECS
  python3 - "$ops" "$mb" "$full" "$empty" "$full_rss" "$pass_ms" <<'PY'
import sys
ops, mb, full, empty, rss_kb, pass_ms = sys.argv[1:]
ops, full, empty = int(ops), float(full), float(empty)
ratio = full / empty if empty > 0 else float("nan")
rate = ops / full if full > 0 else float("nan")
print(f"| {ops} | {mb} | {full:.2f} | {empty:.2f} | {ratio:.2f} | {rate:,.0f} | {int(rss_kb) / 1024:.0f} | {pass_ms} |")
PY
done
