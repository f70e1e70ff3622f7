#!/usr/bin/env bash
# Benchmark of the foundation: load + verify (`validate`) and load + verify + write
# (`rewrite --passes=`, the empty pipeline) of generated jobs, side by side with `jq -c .` on the
# same file. Median wall time of RUNS runs, peak RSS from /usr/bin/time -v. Not part of ctest.
# usage: scripts/bench-io.sh [SP_OPT] [RUNS]   Env: BENCH_LAYERS="900 2700" (mlp layers, tp 4)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
runs=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$root/scripts/bench-lib.sh"
command -v jq > /dev/null || { echo "jq is not installed (apt-get install jq)"; exit 1; }

echo "sp-opt gen mlp --tp 4 --sequence-parallel --layers L; median of $runs runs; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| ops | file MB | validate s | validate RSS MiB | rewrite --passes= s | rewrite RSS MiB | RSS / file | jq -c . s | jq RSS MiB | speed-up vs jq |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for layers in ${BENCH_LAYERS:-900 2700}; do
  job=$dir/job.json
  ops=$("$sp_opt" gen mlp --tp 4 --layers "$layers" --sequence-parallel -o "$job" | sed -E 's/.* ([0-9]+) ops.*/\1/')
  mb=$(( $(stat -c %s "$job") / 1000000 ))
  read -r v_s v_rss _ < <(measure "$sp_opt" validate "$job")
  read -r r_s r_rss _ < <(measure "$sp_opt" rewrite "$job" "$dir/out.json" --passes=)
  read -r j_s j_rss _ < <(measure jq -c . "$job")
  ratio=$(awk -v a="$r_rss" -v b="$mb" 'BEGIN {printf "%.1f", a * 1.048576 / b}')
  speedup=$(awk -v a="$j_s" -v b="$r_s" 'BEGIN {printf "%.1f", a / b}')
  echo "| $ops | $mb | $v_s | $v_rss | $r_s | $r_rss | $ratio | $j_s | $j_rss | ${speedup}x |"
done
