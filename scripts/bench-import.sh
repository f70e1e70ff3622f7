#!/usr/bin/env bash
# Benchmark of the Paddle ProgramDesc path: a generated job (sp-opt gen mlp --tp 4
# --sequence-parallel --layers L) exported to one .pdmodel per rank and imported back, beside
# `validate` of the same job in JSON. Median wall time of RUNS runs, peak RSS from /usr/bin/time -v.
# Not part of ctest.
# usage: scripts/bench-import.sh [SP_OPT] [RUNS]   Env: BENCH_LAYERS="900" (900 layers: ~100k ops)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
runs=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$root/scripts/bench-lib.sh"

echo "sp-opt gen mlp --tp 4 --sequence-parallel --layers L; median of $runs runs; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Wall time moves with the machine's load; user CPU seconds (max over runs) less so."
echo
echo "| ops | JSON MB | pdmodel MB | export s (user) | export RSS MiB | import s (user) | import RSS MiB | validate (JSON) s (user) | validate RSS MiB | same job back |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for layers in ${BENCH_LAYERS:-900}; do
  job=$dir/job.json
  ops=$("$sp_opt" gen mlp --tp 4 --layers "$layers" --sequence-parallel -o "$job" | sed -E 's/.* ([0-9]+) ops.*/\1/')
  mb=$(( $(stat -c %s "$job") / 1000000 ))
  read -r e_s e_rss e_u < <(measure "$sp_opt" export "$job" --to pdmodel -o "$dir/pd")
  pd_mb=$(( $(cat "$dir"/pd/rank_*.pdmodel | wc -c) / 1000000 ))
  files=$(ls "$dir"/pd/rank_*.pdmodel | sort -V)
  # shellcheck disable=SC2086
  read -r i_s i_rss i_u < <(measure "$sp_opt" import $files -o "$dir/back.json")
  read -r v_s v_rss v_u < <(measure "$sp_opt" validate "$job")
  same=$(python3 -c 'import json,sys; h=lambda p: p; print("yes" if json.load(open(sys.argv[1]),object_pairs_hook=h)==json.load(open(sys.argv[2]),object_pairs_hook=h) else "NO")' "$job" "$dir/back.json")
  echo "| $ops | $mb | $pd_mb | $e_s ($e_u) | $e_rss | $i_s ($i_u) | $i_rss | $v_s ($v_u) | $v_rss | $same |"
done
