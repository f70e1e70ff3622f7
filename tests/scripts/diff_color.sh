#!/usr/bin/env bash
# `sp-opt diff` colours its text on a terminal only, and never when NO_COLOR is set or the output
# is a pipe. A terminal is provided by util-linux `script`; without it the test is skipped.
# Usage: diff_color.sh SP_OPT SOURCE_DIR
set -uo pipefail
sp_opt=$1
jobs=$2/testdata/jobs
if ! command -v script >/dev/null; then
  echo "SKIP diff_color: util-linux 'script' is not installed; cannot give sp-opt a terminal"
  exit 77
fi
cmd="$sp_opt diff $jobs/hand_tp2_legacy.json $jobs/hand_tp2_legacy.fused.json --rank 0"
red=$'\e[31m'
on_tty=$(env -u NO_COLOR script -qec "$cmd" /dev/null)
no_color=$(NO_COLOR=1 script -qec "$cmd" /dev/null)
piped=$(env -u NO_COLOR $cmd)
forced=$(env -u NO_COLOR $cmd --color always)
fail() { echo "FAIL diff_color: $*"; exit 1; }
[[ $on_tty == *"$red  - op 1  c_allreduce_sum"* ]] || fail "no red removed op on a terminal: $on_tty"
[[ $no_color != *$'\e['* ]] || fail "colour on a terminal despite NO_COLOR"
[[ $no_color == *"- op 1  c_allreduce_sum"* ]] || fail "NO_COLOR output lacks the listing: $no_color"
[[ $piped != *$'\e['* ]] || fail "colour in a pipe"
[[ $forced == *"$red"* ]] || fail "--color always gave no colour"
echo "PASS diff_color"
