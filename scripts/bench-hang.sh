#!/usr/bin/env bash
# Benchmark of validate's hang check next to its load and verify: `validate --timings` on generated
# gpt jobs of about 100k and 1M ops (tp 4, sequence parallel, tiny shapes: the op count is what
# matters). Median of RUNS runs per size, and the peak RSS of the last. Not part of ctest.
# usage: scripts/bench-hang.sh [SP_OPT] [RUNS]     Env: BENCH_LAYERS="348 3473" (about 100k, 1M ops)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
runs=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "validate --timings, median of $runs runs; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| ops | edges | file MB | load s | verify s | hang check s | hang check / load | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for layers in ${BENCH_LAYERS:-348 3473}; do
  job=$dir/job.json
  "$sp_opt" gen gpt --tp 4 --layers "$layers" --sequence-parallel --hidden 64 --heads 4 --seq 16 --batch 2 -o "$job" > /dev/null
  loads=() verifies=() hangs=()
  for _ in $(seq "$runs"); do
    line=$(/usr/bin/time -f "rss %M" "$sp_opt" validate "$job" --timings 2>&1 >/dev/null | tr '\n' ' ')
    # "FILE: load 1.2 s, verify 0.5 s, hang check 0.3 s (100256 ops, 274288 edges) rss 123456"
    loads+=("$(echo "$line" | sed -E 's/.*load ([0-9.]+) s.*/\1/')")
    verifies+=("$(echo "$line" | sed -E 's/.*verify ([0-9.]+) s.*/\1/')")
    hangs+=("$(echo "$line" | sed -E 's/.*hang check ([0-9.]+) s.*/\1/')")
    ops=$(echo "$line" | sed -E 's/.*\(([0-9]+) ops.*/\1/') edges=$(echo "$line" | sed -E 's/.* ([0-9]+) edges.*/\1/')
    rss=$(echo "$line" | sed -E 's/.*rss ([0-9]+).*/\1/')
  done
  l=$(median "${loads[@]}") v=$(median "${verifies[@]}") h=$(median "${hangs[@]}")
  echo "| $ops | $edges | $(( $(stat -c %s "$job") / 1000000 )) | $l | $v | $h | $(awk "BEGIN {printf \"%.2f\", $h / $l}") | $(( rss / 1024 )) |"
  rm -f "$job"
done
