#!/usr/bin/env bash
# Browser test of `sp-opt analyze --format html`: headless Chromium renders the page of a
# sequence-parallel GPT job of realistic shape (shapes cost nothing here) and its fused rewrite; the screenshot must show the timeline (forward,
# backward and collective fills in far more pixels than the legend swatches hold) and the memory
# curve. Also checks that the page is self-contained. Skips (exit 77) without Chromium.
# Usage: analyze_html.sh SP_OPT SOURCE_DIR
set -uo pipefail
sp_opt=$1
src=$2

. "$src/tests/scripts/browser_test.bash"
browser_test analyze_html "the analyze page is not checked in a browser"

"$sp_opt" gen gpt --tp 4 --sequence-parallel --hidden 2048 --heads 16 --seq 1024 --dtype bfloat16 -o "$work/sp.json" >/dev/null ||
  fail "gen failed"
"$sp_opt" rewrite "$work/sp.json" "$work/fused.json" || fail "rewrite failed"
"$sp_opt" analyze "$work/sp.json" "$work/fused.json" --format html -o "$work/analyze.html" || fail "analyze --format html failed"
f=$work/analyze.html
grep -q '<svg' "$f" || fail "the page holds no inline SVG"
if grep -Eiq '(src|href)="?(https?:)?//|<link|<script|@import|url\(' "$f"; then
  fail "the page refers to something outside itself (or runs a script)"
fi

timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$(mktemp -d -p "$work")" --screenshot="$work/analyze.png" --window-size=1300,2400 "file://$f" \
  >"$work/chromium.log" 2>&1
[ -s "$work/analyze.png" ] || { tail -5 "$work/chromium.log"; fail "Chromium wrote no screenshot"; }

# The colours are analyze_html.cpp's fills.
python3 "$src/tests/scripts/png_colors.py" "$work/analyze.png" forward=#4a90d9 backward=#e8913a comm=#c0392b \
  memory=#7b3fb3 >"$work/counts" || fail "cannot decode the screenshot"
cat "$work/counts"
value() { sed -n "s/^$1 //p" "$work/counts"; }
[ "$(value non-white)" -gt 50000 ] || fail "the screenshot is (nearly) blank"
[ "$(value forward)" -gt 2000 ] || fail "no forward ops drawn in the timeline"
[ "$(value backward)" -gt 2000 ] || fail "no backward ops drawn in the timeline"
[ "$(value comm)" -gt 2000 ] || fail "no collectives drawn in the timeline"
[ "$(value memory)" -gt 300 ] || fail "no memory curve drawn"
if [ -n "${SPOPT_KEEP_SCREENSHOTS:-}" ]; then cp "$work"/*.png "$work"/*.html "$SPOPT_KEEP_SCREENSHOTS"/; fi
echo "PASS analyze_html"
