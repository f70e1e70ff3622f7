#!/usr/bin/env bash
# Inputs that are no regular file are read once, to their end, up to --max-input-bytes: a FIFO
# (mkfifo), process substitution <(cat job), /dev/stdin and "-" work for validate, rewrite and
# import; /dev/zero ends with one line and exit 2 instead of growing without bound.
set -u
SPOPT=$(realpath "$1"); SRC=$2
JOB=$SRC/testdata/jobs/hand_tp2_legacy.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
expect_rc() {  # WANT RC WHAT
  [ "$2" -eq "$1" ] || bad "$3: exit $2, expected $1; stderr: $(head -c 300 "$tmp/err")"
}
# Every run is bounded: a hang is a failure, not a stuck test.
run() { timeout 20 "$SPOPT" "$@"; }

"$SPOPT" rewrite "$JOB" "$tmp/expected.json" 2>/dev/null || { echo "FAIL: reference rewrite"; exit 1; }

# A FIFO, 4 times each (the old code hung on about half the tries).
for i in 1 2 3 4; do
  rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"
  cat "$JOB" >"$tmp/fifo" &
  run validate "$tmp/fifo" >"$tmp/out" 2>"$tmp/err"; rc=$?
  wait
  expect_rc 0 $rc "validate FIFO (try $i)"
  grep -q "valid (2 ranks" "$tmp/out" || bad "validate FIFO (try $i): $(cat "$tmp/out")"

  rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"
  cat "$JOB" >"$tmp/fifo" &
  run rewrite "$tmp/fifo" "$tmp/out.json" 2>"$tmp/err"; rc=$?
  wait
  expect_rc 0 $rc "rewrite FIFO (try $i)"
  cmp -s "$tmp/out.json" "$tmp/expected.json" || bad "rewrite FIFO (try $i): output differs"
  rm -f "$tmp/out.json"
done

# Process substitution, /dev/stdin (a pipe and a redirected file) and "-".
run validate <(cat "$JOB") >"$tmp/out" 2>"$tmp/err"; expect_rc 0 $? "validate <(cat job)"
run rewrite <(cat "$JOB") "$tmp/ps.json" 2>"$tmp/err"; expect_rc 0 $? "rewrite <(cat job)"
cmp -s "$tmp/ps.json" "$tmp/expected.json" || bad "rewrite <(cat job): output differs"
cat "$JOB" | run validate /dev/stdin >"$tmp/out" 2>"$tmp/err"; expect_rc 0 $? "validate /dev/stdin (pipe)"
run validate /dev/stdin <"$JOB" >"$tmp/out" 2>"$tmp/err"; expect_rc 0 $? "validate /dev/stdin (file)"
cat "$JOB" | run rewrite /dev/stdin - >"$tmp/stdin.json" 2>"$tmp/err"; expect_rc 0 $? "rewrite /dev/stdin -"
cmp -s "$tmp/stdin.json" "$tmp/expected.json" || bad "rewrite /dev/stdin -: output differs"
cat "$JOB" | run rewrite - "$tmp/dash.json" 2>"$tmp/err"; expect_rc 0 $? "rewrite - OUT"
cmp -s "$tmp/dash.json" "$tmp/expected.json" || bad "rewrite - OUT: output differs"
# A text job through a pipe (told from JSON by its first line, as a file is).
run print "$JOB" -o "$tmp/job.sptxt" 2>"$tmp/err"; expect_rc 0 $? "print"
cat "$tmp/job.sptxt" | run validate - >"$tmp/out" 2>"$tmp/err"; expect_rc 0 $? "validate - (text job)"

# A Paddle program through a FIFO (import reads Paddle/PIR files the same way).
PIR=$SRC/testdata/paddle/lite_simple_model.pdmodel
if run import "$PIR" -o "$tmp/imported.json" 2>/dev/null; then
  rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"
  cat "$PIR" >"$tmp/fifo" &
  run import "$tmp/fifo" -o "$tmp/imported_fifo.json" 2>"$tmp/err"; rc=$?
  wait
  expect_rc 0 $rc "import FIFO"
  cmp -s "$tmp/imported_fifo.json" "$tmp/imported.json" || bad "import FIFO: output differs"
  run import <(cat "$PIR") -o "$tmp/imported_ps.json" 2>"$tmp/err"; expect_rc 0 $? "import <(cat program)"
  cmp -s "$tmp/imported_ps.json" "$tmp/imported.json" || bad "import <(cat program): output differs"
  run import /dev/zero --max-input-bytes 64K -o "$tmp/imported_zero.json" 2>"$tmp/err"; expect_rc 2 $? "import /dev/zero"
  [ "$(cat "$tmp/err")" = "/dev/zero: input exceeds --max-input-bytes=65536" ] || bad "import /dev/zero message: $(cat "$tmp/err")"
else
  bad "import of $PIR failed"
fi

# /dev/zero: the limit, one line, exit 2, promptly (it used to grow without bound).
run validate - --max-input-bytes 1M </dev/zero >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_rc 2 $rc "validate - < /dev/zero"
[ "$(cat "$tmp/err")" = "-: input exceeds --max-input-bytes=1048576" ] || bad "validate /dev/zero message: $(cat "$tmp/err")"
run --max-input-bytes 4096 rewrite /dev/zero "$tmp/zero.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_rc 2 $rc "rewrite /dev/zero"
[ "$(cat "$tmp/err")" = "/dev/zero: input exceeds --max-input-bytes=4096" ] || bad "rewrite /dev/zero message: $(cat "$tmp/err")"
[ -e "$tmp/zero.json" ] && bad "rewrite /dev/zero left an output"
# A pipe just over the limit fails, one at the limit loads.
size=$(stat -c %s "$JOB")
cat "$JOB" | run validate - --max-input-bytes $((size - 1)) >/dev/null 2>"$tmp/err"; expect_rc 2 $? "pipe over the limit"
cat "$JOB" | run validate - --max-input-bytes "$size" >/dev/null 2>"$tmp/err"; expect_rc 0 $? "pipe at the limit"
# A regular file is mapped, not held: the limit does not apply to it.
run validate "$JOB" --max-input-bytes 1 >/dev/null 2>"$tmp/err"; expect_rc 0 $? "regular file under a small limit"

[ $fail = 0 ] && echo "stream inputs: FIFO x4 (validate, rewrite), <(cat), /dev/stdin, -, import, /dev/zero: ok"
exit $fail
