#!/usr/bin/env bash
# Output lost on a full standard output is an error, never a success: every command writing to
# stdout > /dev/full exits 2 with exactly one line. Small outputs (buffered until exit) and large
# ones (written as they come) alike; a closed stdout too.
set -u
SPOPT=$(realpath "$1"); SRC=$2
if [ ! -c /dev/full ] || ( echo x >/dev/full ) 2>/dev/null; then
  echo "SKIP full_stdout: no /dev/full (a device on which every write fails with ENOSPC)"; exit 77
fi
JOB=$SRC/testdata/jobs/hand_tp2_legacy.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
WANT="sp-opt: error writing standard output: No space left on device"
"$SPOPT" rewrite "$JOB" "$tmp/after.json" 2>/dev/null || { echo "FAIL: reference rewrite"; exit 1; }
# A job whose JSON is a few MB, so that the writes fail while the output streams.
"$SPOPT" gen gpt --tp 2 --layers 24 --hidden 64 --heads 4 -o "$tmp/big.json" >/dev/null || { echo "FAIL: gen"; exit 1; }

check() {  # WHAT... : runs sp-opt WHAT > /dev/full
  timeout 120 "$SPOPT" "$@" >/dev/full 2>"$tmp/err"; rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: sp-opt $* > /dev/full: exit $rc, expected 2"; fail=1; fi
  if [ "$(cat "$tmp/err")" != "$WANT" ]; then echo "FAIL: sp-opt $* > /dev/full: stderr: $(head -c 400 "$tmp/err")"; fail=1; fi
  n=$((n + 1))
}
n=0
check rewrite "$JOB" -
check rewrite "$tmp/big.json" -
check rewrite "$JOB" - --emit text
check validate "$JOB"
check validate --format json "$JOB"
check replay "$JOB"
check check "$JOB" "$tmp/after.json"
check diff "$JOB" "$tmp/after.json"
check diff "$JOB" "$tmp/after.json" --format json
check print "$JOB"
check print "$tmp/big.json"
check graph "$JOB" --rank 0
check analyze "$SRC/testdata/jobs/gen_mlp_tp2_sp.json"
check gen mlp -o -
check export "$JOB" -o "$tmp/export"
check passes
check --help
check --version
check rewrite --help
# A file output beside a message on stdout: the message is lost, so the file must not appear.
check export "$JOB" -o "$tmp/export2"
[ -e "$tmp/export2" ] && { echo "FAIL: export > /dev/full left $tmp/export2"; fail=1; }
check gen mlp -o "$tmp/gen.json"
[ -e "$tmp/gen.json" ] && { echo "FAIL: gen > /dev/full left gen.json"; fail=1; }

# A failed stdout with a file output beside it: the report must not appear (one transaction).
timeout 60 "$SPOPT" rewrite "$JOB" - --report "$tmp/report.json" >/dev/full 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: rewrite - --report > /dev/full: exit $rc"; fail=1; }
[ -e "$tmp/report.json" ] && { echo "FAIL: rewrite - --report > /dev/full wrote the report"; fail=1; }
# replay --trace to a full stdout: no trace.
timeout 60 "$SPOPT" replay "$JOB" --trace "$tmp/trace.json" >/dev/full 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: replay --trace > /dev/full: exit $rc"; fail=1; }
[ -e "$tmp/trace.json" ] && { echo "FAIL: replay --trace > /dev/full wrote the trace"; fail=1; }

# A closed stdout is lost output too.
"$SPOPT" validate "$JOB" >&- 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || { echo "FAIL: validate >&-: exit $rc, expected 2"; fail=1; }
[ "$(cat "$tmp/err")" = "sp-opt: error writing standard output: Bad file descriptor" ] || { echo "FAIL: validate >&-: $(cat "$tmp/err")"; fail=1; }

# And a command that succeeds is still 0 with stdout fine.
"$SPOPT" validate "$JOB" >/dev/null 2>&1 || { echo "FAIL: validate > /dev/null"; fail=1; }
ls "$tmp" | grep -q '\.tmp\.' && { echo "FAIL: temp files left: $(ls "$tmp")"; fail=1; }
[ $fail = 0 ] && echo "full stdout: $n commands > /dev/full exit 2 with one line; report/trace not written; >&- exit 2: ok"
exit $fail
