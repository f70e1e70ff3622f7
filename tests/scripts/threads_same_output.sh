#!/usr/bin/env bash
# The passes' per-rank threads change nothing but time: the default chain, and the overlap pass
# under a memory cap that makes it reschedule, write the same bytes and the same --report with
# --threads 1 as with every core, on jobs of several ranks (gpt tp 4 with its comm streams and
# regathers; llama tp 2 with a vocab-parallel head). --threads 0 is bad input.
set -u
SPOPT=$(realpath "$1")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$SPOPT" gen gpt --tp 4 --layers 6 --hidden 256 --heads 8 --seq 128 --batch 2 --sequence-parallel -o "$tmp/gpt.json" >/dev/null || exit 1
"$SPOPT" gen llama --tp 2 --layers 4 --sequence-parallel -o "$tmp/llama.json" >/dev/null || exit 1
for job in gpt llama; do
  for passes in "" "--passes=fuse-allreduce-split,regather-activations,overlap-collectives{memory-cap=0,window=64}"; do
    # shellcheck disable=SC2086
    "$SPOPT" --threads 1 rewrite $passes --report "$tmp/r1.json" "$tmp/$job.json" "$tmp/one.json" 2>/dev/null || bad "$job $passes: --threads 1"
    # shellcheck disable=SC2086
    "$SPOPT" rewrite $passes --report "$tmp/rn.json" "$tmp/$job.json" "$tmp/all.json" 2>/dev/null || bad "$job $passes: every core"
    cmp -s "$tmp/one.json" "$tmp/all.json" || bad "$job $passes: the outputs differ"
    # The reports hold times and the output's name; everything else must agree.
    python3 - "$tmp/r1.json" "$tmp/rn.json" <<'PY' || bad "$job $passes: the reports differ"
import json, sys
def strip(x):
    if isinstance(x, dict): return {k: strip(v) for k, v in x.items() if not k.endswith("_ms") and k != "output"}
    if isinstance(x, list): return [strip(v) for v in x]
    return x
a, b = (strip(json.load(open(f))) for f in sys.argv[1:])
sys.exit(0 if a == b else 1)
PY
  done
done
"$SPOPT" rewrite --threads 0 "$tmp/gpt.json" "$tmp/x.json" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] || bad "--threads 0: exit $rc, not 2"
grep -q -- "--threads" "$tmp/err" || bad "--threads 0: the error does not name the option: $(cat "$tmp/err")"
[ -e "$tmp/x.json" ] && bad "--threads 0 wrote an output"
[ $fail = 0 ] && echo "ok: same bytes and report on 1 thread and on every core"
exit $fail
