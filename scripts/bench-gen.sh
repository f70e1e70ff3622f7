#!/usr/bin/env bash
# Benchmark: `sp-opt gen` jobs from 10k to 1M ops; times gen, `validate` and (when this build has
# it) `rewrite` as whole processes: median wall time of RUNS runs, peak RSS from /usr/bin/time -v.
# Prints a markdown table. Not part of ctest.
# usage: scripts/bench-gen.sh [SP_OPT] [RUNS]   (defaults: build/sp-opt, 3)
# Env: BENCH_SIZES="10000 100000 1000000" (target op counts), BENCH_DIR (scratch dir, default a temp dir)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
runs=${2:-3}
sizes=${BENCH_SIZES:-"10000 100000 1000000"}
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$dir"' EXIT
tp=8
has_rewrite=0
"$sp_opt" --help | grep -E "^  rewrite " > /dev/null && has_rewrite=1

source "$root/scripts/bench-lib.sh"

echo "sp-opt gen mlp --tp $tp --sequence-parallel --layers L; median of $runs runs; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if (( has_rewrite )); then
  echo "| ops | ranks | file MiB | gen s | gen RSS MiB | validate s | validate RSS MiB | rewrite s | rewrite RSS MiB |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
else
  echo "| ops | ranks | file MiB | gen s | gen RSS MiB | validate s | validate RSS MiB |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
fi
for target in $sizes; do
  # mlp with sequence parallelism: 28 ops per layer per rank, plus loss and seed.
  layers=$(( (target + 28 * tp / 2) / (28 * tp) ))
  (( layers < 1 )) && layers=1
  job="$dir/gen_$target.json"
  read -r gen_s gen_rss _ < <(measure "$sp_opt" gen mlp --tp "$tp" --layers "$layers" --sequence-parallel -o "$job")
  ops=$("$sp_opt" validate "$job" | sed -E 's/.*, ([0-9]+) ops\)/\1/')
  mib=$(( $(stat -c %s "$job") / 1048576 ))
  read -r val_s val_rss _ < <(measure "$sp_opt" validate "$job")
  row="| $ops | $tp | $mib | $gen_s | $gen_rss | $val_s | $val_rss |"
  if (( has_rewrite )); then
    read -r rw_s rw_rss _ < <(measure "$sp_opt" rewrite "$job" "$dir/rewritten_$target.json")
    row+=" $rw_s | $rw_rss |"
    rm -f "$dir/rewritten_$target.json"
  fi
  echo "$row"
  rm -f "$job"
done
