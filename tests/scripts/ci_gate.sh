#!/bin/bash
# sp-opt ci on a job made to regress: the sequence-parallel chain's output is the baseline (its
# analyze report saved), the job without regather and overlap (peak memory up, overlap lost) must
# fail the gate with exit 1 in every format: text (one line per breach naming figure, rank and
# both values), json, JUnit XML (checked by junit_check.py against the Jenkins schema's rules) and
# GitHub workflow commands. The optimised job passes; a budgets file beside the job is read; a bad
# budget is exit 2 naming the file and key; a hanging job fails the gate.
set -u
SP_OPT=$(realpath "$1") SRC=$(realpath "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cd "$tmp"
"$SP_OPT" gen gpt --dtype bfloat16 --hidden 2048 --heads 16 --seq 1024 --batch 1 --tp 4 --layers 2 --sequence-parallel -o job.json > /dev/null || exit 1
"$SP_OPT" rewrite job.json opt.json 2> /dev/null || bad "rewrite"
"$SP_OPT" rewrite job.json regressed.json --passes=fuse-allreduce-split 2> /dev/null || bad "rewrite (fuse only)"
"$SP_OPT" analyze opt.json --format json -o opt.analyze.json || bad "analyze"

"$SP_OPT" ci opt.json --baseline opt.analyze.json --max-regression 5% > out.txt; rc=$?
[ $rc -eq 0 ] && grep -q "^opt.json: passed (23 checks, 0 failed)" out.txt || bad "optimised job: exit $rc: $(cat out.txt)"

"$SP_OPT" ci regressed.json --baseline opt.analyze.json --max-regression 5% > out.txt; rc=$?
[ $rc -eq 1 ] || bad "text: exit $rc"
for figure in peak_memory activation_memory exposed_comm; do
  grep -qE "^regressed.json: $figure rank 3: [0-9.]+ [KMG]?i?B|us|ms, baseline .* over the 5% allowed regression" out.txt || bad "text: no $figure breach for rank 3: $(cat out.txt)"
done
grep -qE "^regressed.json: step_time: .*, baseline .* over the 5% allowed regression\)$" out.txt || bad "text: no step_time breach"
grep -q "^regressed.json: FAILED (23 checks, 13 failed)$" out.txt || bad "text summary: $(tail -1 out.txt)"

"$SP_OPT" ci regressed.json --baseline opt.json --max-regression 5% --format json > out.json; rc=$?
[ $rc -eq 1 ] || bad "json: exit $rc"
python3 -c "
import json, sys
d = json.load(open('out.json'))
s = d['suites'][0]
failed = [c['name'] for c in s['cases'] if c['status'] == 'failed']
assert not s['passed'] and len(failed) == 13, failed
assert 'regression exposed_comm rank 0' in failed, failed
" || bad "json report (a job as the baseline)"

"$SP_OPT" ci regressed.json --baseline opt.analyze.json --max-regression 5% --format junit -o out.xml; rc=$?
[ $rc -eq 1 ] || bad "junit: exit $rc"
python3 "$SRC/tests/scripts/junit_check.py" out.xml > check.txt || bad "junit: $(cat check.txt)"
grep -q "ok: 1 suites, 23 testcases, 13 failures" check.txt || bad "junit counts: $(cat check.txt)"

"$SP_OPT" ci regressed.json --baseline opt.analyze.json --max-regression 5% --format github > out.gh; rc=$?
[ $rc -eq 1 ] || bad "github: exit $rc"
[ "$(grep -c '^::error file=regressed.json,title=sp-opt regression ' out.gh)" -eq 13 ] || bad "github: $(cat out.gh)"
grep -q "^::error .*::exposed_comm rank 0: .* (+[0-9.]*%25, over the 5%25 allowed regression)$" out.gh || bad "github escaping: $(cat out.gh)"

# --passes rewrites in memory first: the chain's output meets the baseline, fusion alone does not.
"$SP_OPT" ci job.json --passes=sequence-parallel --baseline opt.analyze.json > out.txt; rc=$?
[ $rc -eq 0 ] && grep -q "^job.json: passed (25 checks, 0 failed)" out.txt || bad "--passes=sequence-parallel: exit $rc: $(cat out.txt)"
"$SP_OPT" ci job.json --passes=fuse-allreduce-split --baseline opt.analyze.json --max-regression 5% > out.txt; rc=$?
[ $rc -eq 1 ] && grep -q "^job.json: FAILED (25 checks, 13 failed)" out.txt || bad "--passes=fuse-allreduce-split: exit $rc: $(cat out.txt)"

# Budgets beside the job, and the command line over them.
echo '{"peak_memory": "140 MiB", "baseline": "opt.analyze.json", "max_regression": "50%"}' > regressed.budgets.json
"$SP_OPT" ci regressed.json > out.txt; rc=$?
[ $rc -eq 1 ] && [ "$(grep -c 'over the budget 140.00 MiB' out.txt)" -eq 4 ] && ! grep -q "over the 50% allowed" out.txt || bad "budgets file: exit $rc: $(cat out.txt)"
"$SP_OPT" ci regressed.json --peak-memory "1 GiB" > out.txt; rc=$?
[ $rc -eq 0 ] || bad "--peak-memory over the file: exit $rc: $(cat out.txt)"
echo '{"peak_memory": "lots"}' > regressed.budgets.json
out=$("$SP_OPT" ci regressed.json 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$out" = "regressed.budgets.json: /peak_memory: \"lots\" is not a size (bytes, or N KB|MB|GB|KiB|MiB|GiB|TiB)" ] || bad "bad budget: exit $rc: $out"
rm regressed.budgets.json

# A hanging job fails the gate (exit 1), the cycle in the report.
python3 "$SRC/tests/scripts/crossed_rings.py" crossed.json default default
"$SP_OPT" ci crossed.json --format junit -o crossed.xml; rc=$?
[ $rc -eq 1 ] && grep -q '<failure message="crossed.json: /programs/0/blocks/0/ops/0: hang: 4 ops on 2 rank(s) form a cycle' crossed.xml || bad "hanging job: exit $rc: $(cat crossed.xml)"
python3 "$SRC/tests/scripts/junit_check.py" crossed.xml > /dev/null || bad "hanging job's junit"
# A file that is not a job: exit 2, the report still written.
echo '{' > broken.json
"$SP_OPT" ci broken.json --format junit -o broken.xml; rc=$?
[ $rc -eq 2 ] && grep -q '<testcase name="load"' broken.xml || bad "broken job: exit $rc"
[ $fail -eq 0 ] && echo "ok: ci gate in text, json, junit and github formats"
exit $fail
