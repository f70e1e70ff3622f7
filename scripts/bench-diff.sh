#!/usr/bin/env bash
# Times `sp-opt diff` of a job against its rewrite at growing sizes; prints a markdown table.
# The jobs come from `sp-opt gen mlp --tp 4 --layers L --sequence-parallel` and `sp-opt rewrite`
# when this build has them, else from scripts/synth_diff_pair.py (all-reduce+split fused into
# reduce-scatter by construction). Linear cost shows as a flat "µs per op" column.
# Usage: scripts/bench-diff.sh [SP_OPT] [LAYERS...]     (default: build/sp-opt 1250 2500 5000 10000)
# SPOPT_GEN / SPOPT_REWRITE name other sp-opt binaries to generate and rewrite with (for a build
# of this branch that lacks those subcommands).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sp_opt=${1:-$here/../build/sp-opt}
shift || true
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(1250 2500 5000 10000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gen=${SPOPT_GEN:-$sp_opt}
rewrite=${SPOPT_REWRITE:-$sp_opt}
has_subcommand() { "$1" --help | grep -qE "^  $2 "; }
if has_subcommand "$gen" gen && has_subcommand "$rewrite" rewrite; then
  source_kind="sp-opt gen mlp --tp 4 --sequence-parallel + sp-opt rewrite (fusion)"
  make_pair() { "$gen" gen mlp --tp 4 --layers "$1" --sequence-parallel -o "$2" >/dev/null && "$rewrite" rewrite "$2" "$3" >/dev/null; }
else
  source_kind="scripts/synth_diff_pair.py, 4 ranks (sp-opt gen/rewrite not in this build)"
  make_pair() { python3 "$here/synth_diff_pair.py" 4 "$1" "$2" "$3"; }
fi

ops_of() { "$sp_opt" validate --format json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["ops"])'; }

# Runs one diff; prints "wall cpu rss_mb compare_s" (rc 0 or 1 is success, as in diff(1)).
timed_diff() {
  local fmt=$1 before=$2 after=$3
  local rc=0
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$sp_opt" -v diff "$before" "$after" --format "$fmt" \
    >"$work/out.$fmt" 2>"$work/log" || rc=$?
  if [ "$rc" -gt 1 ]; then cat "$work/log" >&2; exit 1; fi
  local compare
  compare=$(sed -n 's/.*compared in \([0-9.]*\) s.*/\1/p' "$work/log")
  read -r wall user sys rss < <(tail -n 1 "$work/time")
  echo "$wall $(printf "%.2f" "$(echo "$user + $sys" | bc)") $((rss / 1024)) $compare"
}

echo "Source: $source_kind; $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| layers | ops before | ops after | MB (both) | text: wall s | cpu s | compare s | json: wall s | cpu s | max RSS MB | cpu µs per op |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for l in "${layers[@]}"; do
  make_pair "$l" "$work/before.json" "$work/after.json"
  ops_b=$(ops_of "$work/before.json")
  ops_a=$(ops_of "$work/after.json")
  mb=$(( ($(stat -c %s "$work/before.json") + $(stat -c %s "$work/after.json")) / 1048576 ))
  read -r t_wall t_cpu t_rss t_cmp < <(timed_diff text "$work/before.json" "$work/after.json")
  read -r j_wall j_cpu j_rss _ < <(timed_diff json "$work/before.json" "$work/after.json")
  rss=$(( t_rss > j_rss ? t_rss : j_rss ))
  per_op=$(echo "scale=2; $t_cpu * 1000000 / ($ops_b + $ops_a)" | bc)
  echo "| $l | $ops_b | $ops_a | $mb | $t_wall | $t_cpu | $t_cmp | $j_wall | $j_cpu | $rss | $per_op |"
done
