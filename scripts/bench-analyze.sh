#!/usr/bin/env bash
# Benchmark of `sp-opt analyze`, two tables:
# 1. Honesty of the model: `analyze --preset host` (calibrated on this machine at run time)
#    predicts the step time of generated jobs; `replay` measures it (slowest rank), side by side.
# 2. Speed: analyze (bytes, FLOPs, activations and the simulated timeline) of 100k- and 1M-op jobs
#    against `validate` of the same file (median of RUNS runs, peak RSS).
# Not part of ctest. usage: scripts/bench-analyze.sh [SP_OPT] [RUNS]
#   Env: BENCH_LAYERS="900 9000" (gen mlp --tp 4 --sequence-parallel layers), SKIP_SPEED=1, SKIP_HOST=1
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
runs=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$root/scripts/bench-lib.sh"

echo "$(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); $("$sp_opt" analyze --calibrate)"
if [ -z "${SKIP_HOST:-}" ]; then
  echo
  echo "| job | ops/rank | analyze --preset host: step | replay: slowest rank | predicted / measured |"
  echo "|---|---:|---:|---:|---:|"
  while read -r label args; do
    # shellcheck disable=SC2086
    "$sp_opt" gen $args -o "$dir/h.json" >/dev/null
    # RUNS rounds of (calibrate + predict, replay), interleaved so both see the same machine; the
    # machine may be shared, so each side's median round is compared.
    preds=() meas=()
    for i in $(seq "$runs"); do
      "$sp_opt" analyze "$dir/h.json" --preset host --format json -o "$dir/h.analyze.$i.json"
      preds+=("$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"]["step_s"] * 1e3)' "$dir/h.analyze.$i.json")")
      meas+=("$("$sp_opt" replay "$dir/h.json" | awk '/^  rank [0-9]+ / {if ($3 > m) m = $3} END {print m}')")
    done
    median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
    pred=$(median "${preds[@]}") best=$(median "${meas[@]}")
    ops=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["ranks"][0]["ops"])' "$dir/h.analyze.1.json")
    awk -v l="$label" -v o="$ops" -v p="$pred" -v m="$best" 'BEGIN {printf "| %s | %s | %.1f ms | %.1f ms | %.2f |\n", l, o, p, m, p / m}'
  done <<'JOBS'
gpt-h256-s128-b4-tp2-f32 gpt --tp 2 --hidden 256 --heads 4 --seq 128 --batch 4 --layers 2
gpt-h256-s128-b2-tp2-bf16 gpt --tp 2 --hidden 256 --heads 4 --seq 128 --batch 2 --layers 2 --dtype bfloat16
gpt-h256-s256-b2-tp2-sp gpt --tp 2 --hidden 256 --heads 4 --seq 256 --batch 2 --layers 2 --sequence-parallel
mlp-h512-b32-tp2 mlp --tp 2 --hidden 512 --batch 32 --seq 8 --layers 2
JOBS
fi

if [ -z "${SKIP_SPEED:-}" ]; then
  echo
  echo "| ops | file MB | validate s | validate RSS MiB | analyze s | analyze RSS MiB | analyze / validate |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
  for layers in ${BENCH_LAYERS:-900 9000}; do
    job=$dir/job.json
    ops=$("$sp_opt" gen mlp --tp 4 --layers "$layers" --sequence-parallel -o "$job" | sed -E 's/.* ([0-9]+) ops.*/\1/')
    mb=$(( $(stat -c %s "$job") / 1000000 ))
    read -r v_s v_rss _ < <(measure "$sp_opt" validate "$job")
    read -r a_s a_rss _ < <(measure "$sp_opt" analyze "$job")
    ratio=$(awk -v a="$a_s" -v b="$v_s" 'BEGIN {printf "%.1f", a / b}')
    echo "| $ops | $mb | $v_s | $v_rss | $a_s | $a_rss | ${ratio}x |"
    rm -f "$job"
  done
fi
