#!/usr/bin/env bash
# Benchmark of the foundation: load + verify (`validate`) and load + verify + write
# (`rewrite --passes=`, the empty pipeline) of generated jobs, side by side with `jq -c .` on the
# same file. Median wall time of RUNS runs, peak RSS from /usr/bin/time -v. Not part of ctest.
# usage: scripts/bench-io.sh [--before OLD_SP_OPT] [SP_OPT] [RUNS]   Env: BENCH_LAYERS="900 2700" (mlp layers, tp 4)
# With --before, a before/after table instead: both binaries on the same files, run in pairs (the
# order alternating), so that the load of a shared machine weighs on both alike.
set -euo pipefail
before=
if [[ ${1:-} == --before ]]; then
  before=$2
  shift 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
runs=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$root/scripts/bench-lib.sh"
command -v jq > /dev/null || { echo "jq is not installed (apt-get install jq)"; exit 1; }

echo "sp-opt gen mlp --tp 4 --sequence-parallel --layers L; median of $runs runs; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# make_job LAYERS: generates $job; sets $ops and $mb.
job=$dir/job.json
make_job() {
  ops=$("$sp_opt" gen mlp --tp 4 --layers "$1" --sequence-parallel -o "$job" | sed -E 's/.* ([0-9]+) ops.*/\1/')
  mb=$(( $(stat -c %s "$job") / 1000000 ))
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# compare ARGS...: runs "$before ARGS" and "$sp_opt ARGS" in pairs, $runs times each; prints
# "before_median_s after_median_s before_peak_rss_mib after_peak_rss_mib before_median_user_s
# after_median_user_s" (user CPU time is the steadier figure on a loaded machine).
compare() {
  local rounds=$runs b_times=() a_times=() b_user=() a_user=() b_rss=0 a_rss=0 s r u
  runs=1
  for round in $(seq "$rounds"); do
    # Which goes first alternates: the second of a pair pays for the first's writeback.
    if (( round % 2 )); then
      read -r s r u < <(measure "$before" "$@")
      b_times+=("$s") b_user+=("$u")
      (( r > b_rss )) && b_rss=$r
    fi
    read -r s r u < <(measure "$sp_opt" "$@")
    a_times+=("$s") a_user+=("$u")
    (( r > a_rss )) && a_rss=$r
    if (( round % 2 == 0 )); then
      read -r s r u < <(measure "$before" "$@")
      b_times+=("$s") b_user+=("$u")
      (( r > b_rss )) && b_rss=$r
    fi
  done
  runs=$rounds
  echo "$(median "${b_times[@]}") $(median "${a_times[@]}") $b_rss $a_rss $(median "${b_user[@]}") $(median "${a_user[@]}")"
}
if [[ -n $before ]]; then
  echo "before: $before"
  echo "after:  $sp_opt"
  echo
  echo "| ops | file MB | validate s before | after | user s before | after | RSS MiB before | after | rewrite --passes= s before | after | user s before | after | RSS MiB before | after |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for layers in ${BENCH_LAYERS:-900 2700}; do
    make_job "$layers"
    read -r vb va vb_rss va_rss vb_user va_user < <(compare validate "$job")
    read -r rb ra rb_rss ra_rss rb_user ra_user < <(compare rewrite "$job" "$dir/out.json" --passes=)
    echo "| $ops | $mb | $vb | $va | $vb_user | $va_user | $vb_rss | $va_rss | $rb | $ra | $rb_user | $ra_user | $rb_rss | $ra_rss |"
  done
  exit 0
fi

echo "| ops | file MB | validate s | validate RSS MiB | rewrite --passes= s | rewrite RSS MiB | RSS / file | jq -c . s | jq RSS MiB | speed-up vs jq |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for layers in ${BENCH_LAYERS:-900 2700}; do
  make_job "$layers"
  read -r v_s v_rss _ < <(measure "$sp_opt" validate "$job")
  read -r r_s r_rss _ < <(measure "$sp_opt" rewrite "$job" "$dir/out.json" --passes=)
  read -r j_s j_rss _ < <(measure jq -c . "$job")
  ratio=$(awk -v a="$r_rss" -v b="$mb" 'BEGIN {printf "%.1f", a * 1.048576 / b}')
  speedup=$(awk -v a="$j_s" -v b="$r_s" 'BEGIN {printf "%.1f", a / b}')
  echo "| $ops | $mb | $v_s | $v_rss | $r_s | $r_rss | $ratio | $j_s | $j_rss | ${speedup}x |"
done
