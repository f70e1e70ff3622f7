#!/usr/bin/env bash
# Times the clustered html views on GPT jobs of growing size; prints a markdown table.
# Per size: `sp-opt gen gpt --tp 4 --layers L --sequence-parallel`, `sp-opt rewrite`, then
#   graph AFTER --rank 1 --format html   and   diff BEFORE AFTER --format html
# (wall and cpu seconds, loading the jobs included; page size), and each page opened in headless
# Chromium: the page's own time from navigation start to its first full render (it writes
# <body data-ready-ms=...>, read back with --dump-dom), and the wall time of a whole Chromium run
# that takes a screenshot of it (start-up included).
# Usage: scripts/bench-views.sh [SP_OPT] [LAYERS...]    (default: build/sp-opt 14 139 1390,
#        about 1k, 10k and 100k ops per rank)
# SPOPT_BEFORE=OLD_SP_OPT adds two columns: the same `graph --format html` and `diff --format html`
#        with an older build, stopped after SPOPT_BEFORE_LIMIT seconds (default 120; shown as
#        "> N"), for sizes up to SPOPT_BEFORE_MAX_LAYERS layers (default 14; larger: "not run").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sp_opt=${1:-$here/../build/sp-opt}
shift || true
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(14 139 1390)
before_bin=${SPOPT_BEFORE:-}
before_limit=${SPOPT_BEFORE_LIMIT:-120}
before_max_layers=${SPOPT_BEFORE_MAX_LAYERS:-14}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then browser=$(command -v "$b"); break; fi
done

# Runs a command; prints "wall cpu" (cpu = user + sys). Exit codes 0 and 1 (diff: differ) pass.
timed() {
  local rc=0
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$@" >/dev/null 2>"$work/log" || rc=$?
  if [ "$rc" -gt 1 ]; then cat "$work/log" >&2; exit 1; fi
  read -r wall user sys < <(tail -n 1 "$work/time")
  printf "%s %.2f\n" "$wall" "$(echo "$user + $sys" | bc)"
}
mb() { printf "%.2f" "$(echo "scale=3; $(stat -c %s "$1") / 1048576" | bc)"; }
# Prints "ready_ms wall_s" for a page in headless Chromium, or "- -" without Chromium.
load() {
  if [ -z "$browser" ]; then echo "- -"; return; fi
  local start end ready
  chrome() {
    timeout 300 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
      --disable-component-update --disable-sync --user-data-dir="$(mktemp -d -p "$work")" --window-size=1400,1000 "$@" 2>/dev/null
  }
  # The page's own figure (navigation start to drawn), read from the DOM it leaves...
  chrome --dump-dom "file://$1" >"$work/dom.html" || true
  ready=$(grep -o 'data-ready-ms="[0-9]*"' "$work/dom.html" | grep -o '[0-9]*' || echo "?")
  # ...and what a reader waits for: Chromium started, the page loaded and drawn, a screenshot taken.
  start=$(date +%s.%N)
  chrome --screenshot="$work/shot.png" "file://$1" >/dev/null || true
  end=$(date +%s.%N)
  echo "$ready $(printf "%.1f" "$(echo "$end - $start" | bc)")"
}

echo "Machine: $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg); Chromium: ${browser:-not installed}"
echo
head="| layers | ops per rank | graph html: wall s | cpu s | page MB | Chromium: ready ms | run s"
sep="| ---: | ---: | ---: | ---: | ---: | ---: | ---:"
[ -n "$before_bin" ] && { head+=" | old graph html s | old diff html s"; sep+=" | ---: | ---:"; }
head+=" | diff html: wall s | cpu s | page MB | Chromium: ready ms | run s |"
sep+=" | ---: | ---: | ---: | ---: | ---: |"
echo "$head"
echo "$sep"
footnote=""
for l in "${layers[@]}"; do
  "$sp_opt" gen gpt --tp 4 --layers "$l" --sequence-parallel -o "$work/before.json" >/dev/null
  mark=""
  if ! "$sp_opt" rewrite "$work/before.json" "$work/after.json" >/dev/null 2>"$work/rewrite.log"; then
    # The default pipeline may refuse a job (see the footnote); the fusion alone still makes a diff.
    "$sp_opt" rewrite "$work/before.json" "$work/after.json" --passes=fuse-allreduce-split >/dev/null
    mark="*"
    footnote="\* the default rewrite pipeline failed (\`$(tail -n 1 "$work/rewrite.log")\`); rewritten with --passes=fuse-allreduce-split"
  fi
  ops=$("$sp_opt" validate --format json "$work/after.json" | python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["ops"] // d["ranks"])')
  read -r g_wall g_cpu < <(timed "$sp_opt" graph "$work/after.json" --rank 1 --format html -o "$work/graph.html")
  read -r g_ready g_run < <(load "$work/graph.html")
  row="| $l$mark | $ops | $g_wall | $g_cpu | $(mb "$work/graph.html") | $g_ready | $g_run"
  if [ -n "$before_bin" ]; then
    for cmd in "graph $work/after.json --rank 1" "diff $work/before.json $work/after.json"; do
      if [ "$l" -gt "$before_max_layers" ]; then row+=" | not run"; continue; fi
      start=$(date +%s.%N)
      rc=0
      # shellcheck disable=SC2086
      timeout "$before_limit" "$before_bin" $cmd --format html -o "$work/old.html" >/dev/null 2>&1 || rc=$?
      if [ "$rc" -le 1 ]; then row+=" | $(printf "%.1f" "$(echo "$(date +%s.%N) - $start" | bc)")"; else row+=" | > $before_limit"; fi
    done
  fi
  read -r d_wall d_cpu < <(timed "$sp_opt" diff "$work/before.json" "$work/after.json" --format html -o "$work/diff.html")
  read -r d_ready d_run < <(load "$work/diff.html")
  echo "$row | $d_wall | $d_cpu | $(mb "$work/diff.html") | $d_ready | $d_run |"
done
if [ -n "${footnote:-}" ]; then echo; echo "$footnote"; fi
