#!/bin/bash
# `sp-opt check` must pass on every fused testdata case: each golden case holding an input job
# (in.json) and the rewrite's expected output (expected/out.json) is replayed before and after
# on the same inputs. Cases replay cannot run by contract (dynamic -1 dims that --dynamic-dim
# cannot size consistently, such as a batch a reduce-scatter halves, or a file holding only some
# ranks of a ring: exit 2) are listed, not failed. A check that compares no var fails.
# Plus the deliberately wrong rewrite (a reduce-scatter handing rank 0 chunk 1) must fail.
set -u
SP_OPT=$1 SRC=$2
pass=0 skipped=0 fail=0
for case in "$SRC"/testdata/golden/*/; do
  [ -f "$case/in.json" ] && [ -f "$case/expected/out.json" ] || continue
  name=$(basename "$case")
  out=$("$SP_OPT" check "$case/in.json" "$case/expected/out.json" 2>&1); rc=$?
  if [ $rc -eq 0 ] && echo "$out" | grep -q "no var is fetched or persistable"; then
    echo "FAIL $name: check compared nothing on some rank: $out"; fail=$((fail + 1))
  elif [ $rc -eq 0 ]; then
    pass=$((pass + 1))
  elif [ $rc -eq 2 ] && echo "$out" | grep -qE "dynamic dimension \(-1\)|has no program in this file"; then
    echo "skip $name: $out"; skipped=$((skipped + 1))
  else
    echo "FAIL $name (exit $rc):"; echo "$out"; fail=$((fail + 1))
  fi
done
# A generated training step (forward, backward, sgd) fused by the real pass, when `gen` exists.
if "$SP_OPT" --help | grep -qE "^  gen +"; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  for tp in 2 4; do
    out=$("$SP_OPT" gen gpt --tp $tp --layers 2 --sequence-parallel -o "$tmp/gpt.json" 2>&1 &&
          "$SP_OPT" rewrite "$tmp/gpt.json" "$tmp/fused.json" 2>&1 &&
          "$SP_OPT" check "$tmp/gpt.json" "$tmp/fused.json" 2>&1) && pass=$((pass + 1)) ||
      { echo "FAIL gen gpt --tp $tp --sequence-parallel, rewritten and checked: $out"; fail=$((fail + 1)); }
  done
fi
"$SP_OPT" check "$SRC/testdata/jobs/hand_tp2_legacy.json" "$SRC/testdata/jobs/hand_tp2_wrong_chunk.json" > /dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: the wrong-chunk rewrite passed check (exit $rc)"; fail=$((fail + 1)); }
echo "check_fused_cases: $pass fused cases pass, $skipped skipped, $fail failed"
[ $pass -gt 0 ] || { echo "no fused case found"; exit 1; }
[ $fail -eq 0 ]
