#!/usr/bin/env bash
# Browser test of the clustered graph page (`sp-opt graph --format html`) in headless Chromium:
#  1. the collapsed view of gen_mlp_tp4_sp.json shows one box per layer: the DOM after the page's
#     script ran has exactly one top-level cluster box per /layer_N/ scope of the job, each
#     labelled, and the screenshot (PNG) shows them (cluster fill colour in many pixels);
#  2. a scripted click expands a cluster: the page's #click=NAME hook dispatches a real click
#     event on the box, and the DOM then shows that cluster's ops, as many as its box counted;
#  3. a search centres and details an op (inputs, dims_mapping) and highlights its producer;
#  4. the diff page against the job's fusion (the fuse pass alone: it leaves the optimizer as it is) opens the clusters holding changes, colours removed
#     and added ops and leaves unchanged clusters closed.
# The page is read with --dump-dom after its script ran (it marks <body data-ready="ready">).
# Skips (exit 77) without Chromium. Set SPOPT_KEEP_SCREENSHOTS=DIR to keep the PNGs.
# Usage: cluster_view.sh SP_OPT SOURCE_DIR
set -uo pipefail
sp_opt=$1
src=$2
job=$src/testdata/jobs/gen_mlp_tp4_sp.json

. "$src/tests/scripts/browser_test.bash"
browser_test cluster_view "the page is not checked in a browser"
chrome() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" --window-size=1400,1000 "$@" 2>>"$work/chromium.log"
}
dom() { chrome --virtual-time-budget=5000 --dump-dom "file://$work/g.html$1" >"$2" || fail "Chromium could not load the page ($1)"; grep -q 'data-ready="ready"' "$2" || fail "the page's script did not finish ($1)"; }

"$sp_opt" graph "$job" --rank 1 --format html -o "$work/g.html" || fail "sp-opt graph --format html failed"

# The layers the job has, from the job itself (not from the page).
layers=$(python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
p = [p for p in j['programs'] if p['rank'] == 1][0]
print(' '.join(sorted({o['attrs']['op_namescope'].strip('/') for b in p['blocks'] for o in b['ops'] if o['attrs'].get('op_namescope', '').startswith('/layer_')})))
" "$job")
[ -n "$layers" ] || fail "the job has no /layer_N/ scopes"

# 1. Collapsed: one top-level box per layer.
dom "" "$work/collapsed.html"
boxes=$(grep -oE 'class="gv-cluster" data-cluster="[0-9]+" data-name="layer_[0-9]+" data-path="layer_[0-9]+" data-open="0"' "$work/collapsed.html" | wc -l)
nlayers=$(echo "$layers" | wc -w)
echo "layers in the job: $layers; collapsed layer boxes: $boxes"
[ "$boxes" -eq "$nlayers" ] || fail "expected $nlayers layer boxes, the page shows $boxes"
for l in $layers; do
  grep -q "data-name=\"$l\" data-path=\"$l\" data-open=\"0\"><rect[^>]*></rect><text[^>]*>$l</text>" "$work/collapsed.html" || fail "no labelled box for $l"
done
grep -q 'data-op=' "$work/collapsed.html" && fail "the collapsed view already shows single ops"

chrome --screenshot="$work/collapsed.png" "file://$work/g.html" >/dev/null || fail "no screenshot"
[ -s "$work/collapsed.png" ] || fail "Chromium wrote no screenshot"
python3 "$src/tests/scripts/png_colors.py" "$work/collapsed.png" cluster=#eeeeee >"$work/counts" || fail "cannot decode the screenshot"
cat "$work/counts"
[ "$(sed -n 's/^cluster //p' "$work/counts")" -gt $((nlayers * 8000)) ] || fail "the screenshot does not show the layer boxes"

# 2. A real click on layer_0, then on its forward part: the DOM shows the ops it counted.
first=$(echo "$layers" | awk '{print $1}')
dom "#click=$first" "$work/open1.html"
grep -q "data-name=\"$first\" data-path=\"$first\" data-open=\"1\"" "$work/open1.html" || fail "clicking $first did not open it"
grep -q "data-path=\"$first/forward\" data-open=\"0\"" "$work/open1.html" || fail "open $first shows no forward part"
dom "#click=$first&click=$first/forward" "$work/open2.html"
counted=$(grep -oE "data-path=\"$first/forward\" data-open=\"0\"><rect[^>]*></rect><text[^>]*>forward</text><text[^>]*>[0-9]+ ops" "$work/open1.html" | grep -oE '[0-9]+ ops$' | grep -oE '[0-9]+')
shown=$(grep -o 'class="gv-op[^"]*" data-op=' "$work/open2.html" | wc -l)
echo "$first/forward: box said $counted ops; opened, the page draws $shown"
[ -n "$counted" ] && [ "$shown" -eq "$counted" ] || fail "opened $first/forward shows $shown ops, its box counted ${counted:-?}"
grep -q 'data-type="c_allgather"' "$work/open2.html" || fail "the open layer does not show its collective"
dom "#click=$first&click=$first" "$work/closed.html"
grep -q "data-name=\"$first\" data-path=\"$first\" data-open=\"0\"" "$work/closed.html" || fail "a click on the open $first's header did not close it"
chrome --screenshot="$work/expanded.png" "file://$work/g.html#click=$first&click=$first/forward" >/dev/null

# 3. Search: the op that writes linear_0.tmp_0 is shown with its details and its producer marked.
dom "#search=linear_0.tmp_0" "$work/search.html"
grep -q 'id="gv-panel" class="gv-panel" data-op="[0-9]*"' "$work/search.html" || fail "search opened no op's details"
grep -q 'dims_mapping' "$work/search.html" || fail "the details show no dims_mapping"
grep -q 'class="gv-op gv-sel"\|class="gv-op gv-comm gv-sel"' "$work/search.html" || fail "the found op is not selected"
grep -q 'gv-prod' "$work/search.html" || fail "the found op's producer is not highlighted"

# 4. The diff page is the same view: clusters holding changes start open, removed and added ops
#    are coloured, clusters without changes stay closed.
"$sp_opt" rewrite "$job" "$work/after.json" --passes=fuse-allreduce-split >/dev/null 2>&1 || fail "sp-opt rewrite failed"
"$sp_opt" diff "$job" "$work/after.json" --format html -o "$work/d.html"
[ $? -eq 1 ] || fail "sp-opt diff --format html did not report a difference"
cp "$work/d.html" "$work/g.html"
dom "" "$work/diff.html"
grep -q "data-name=\"$first\" data-path=\"$first\" data-open=\"1\"" "$work/diff.html" || fail "the diff does not open $first, which holds changes"
grep -q 'fill="#f5b8b8"' "$work/diff.html" || fail "the diff shows no removed op"
grep -q 'fill="#b8ecb8"' "$work/diff.html" || fail "the diff shows no added op"
grep -q 'data-name="optimizer" data-path="optimizer" data-open="0"' "$work/diff.html" || fail "the unchanged optimizer cluster is not closed"

if [ -n "${SPOPT_KEEP_SCREENSHOTS:-}" ]; then cp "$work"/*.png "$SPOPT_KEEP_SCREENSHOTS"/; fi
echo "PASS cluster_view"
