#!/usr/bin/env bash
# Browser test of the html views: `sp-opt diff --format html` and `sp-opt graph --format html`
# are rendered by headless Chromium; the screenshots must not be blank and must show the graph
# (the fill colours of removed and added ops in far more pixels than the legend's swatches hold).
# Also checks that the pages are self-contained (nothing to fetch). Skips (exit 77) without
# Chromium. (The pages draw themselves: Graphviz is not needed.)
# Usage: html_view.sh SP_OPT SOURCE_DIR
set -uo pipefail
sp_opt=$1
src=$2
jobs=$src/testdata/jobs

. "$src/tests/scripts/browser_test.bash"
browser_test html_view "html views not checked in a browser"

"$sp_opt" diff "$jobs/hand_tp4_current.json" "$jobs/hand_tp4_current.fused.json" --format html -o "$work/diff.html"
rc=$?
[ $rc -eq 1 ] || fail "sp-opt diff --format html exited $rc, expected 1 (jobs differ)"
"$sp_opt" graph "$jobs/hand_tp4_current.json" --rank 1 --format html -o "$work/graph.html" || fail "sp-opt graph --format html failed"

for page in diff graph; do
  f=$work/$page.html
  grep -q '<svg' "$f" || fail "$page.html holds no inline SVG"
  # url(#id) names an element of the page itself (the SVG arrow marker); any other url( fetches.
  if grep -Eiq '(src|href)="?(https?:)?//|<link|<script[^>]*src|@import|url\([^#]' "$f"; then
    grep -Eio '(src|href)="?(https?:)?//[^" ]*|<link[^>]*>|<script[^>]*src[^>]*>|@import[^;]*|url\([^#][^)]*\)' "$f" | head -3
    fail "$page.html refers to something outside itself"
  fi
done

# Renders a page to a PNG with networking off as far as Chromium allows.
shoot() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" --screenshot="$2" --window-size=1200,900 "file://$1" \
    >"$work/chromium.log" 2>&1
  [ -s "$2" ] || { tail -5 "$work/chromium.log"; fail "Chromium wrote no screenshot of $1"; }
}

# The colours are graph_dot.cpp's statusFill: removed, added, unchanged.
count() { python3 "$src/tests/scripts/png_colors.py" "$1" removed=#f5b8b8 added=#b8ecb8 unchanged=#eeeeee; }
value() { sed -n "s/^$1 //p" "$2"; }

shoot "$work/diff.html" "$work/diff.png"
count "$work/diff.png" >"$work/diff.counts" || fail "cannot decode diff.png"
cat "$work/diff.counts"
[ "$(value non-white "$work/diff.counts")" -gt 20000 ] || fail "diff screenshot is (nearly) blank"
[ "$(value removed "$work/diff.counts")" -gt 1000 ] || fail "diff screenshot shows no removed (red) ops"
[ "$(value added "$work/diff.counts")" -gt 1000 ] || fail "diff screenshot shows no added (green) ops"

shoot "$work/graph.html" "$work/graph.png"
count "$work/graph.png" >"$work/graph.counts" || fail "cannot decode graph.png"
cat "$work/graph.counts"
[ "$(value non-white "$work/graph.counts")" -gt 20000 ] || fail "graph screenshot is (nearly) blank"
[ "$(value unchanged "$work/graph.counts")" -gt 1000 ] || fail "graph screenshot shows no op nodes"
[ "$(value removed "$work/graph.counts")" -eq 0 ] || fail "graph of one job shows removed (red) ops"

if [ -n "${SPOPT_KEEP_SCREENSHOTS:-}" ]; then cp "$work"/*.png "$work"/*.html "$SPOPT_KEEP_SCREENSHOTS"/; fi
echo "PASS html_view"
