#!/usr/bin/env bash
# Every file of the bad-input corpus (testdata/bad) must give exit 2 and exactly the expected
# message lines, with the file name and JSON pointer (text jobs, *.sptxt: FILE:LINE:COL); rewrite
# must leave no output behind.
set -u
SPOPT=$(realpath "$1"); SRC=$2
cd "$SRC/testdata/bad" || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
has_rewrite=0; "$SPOPT" --help 2>/dev/null | grep -q "^  rewrite " && has_rewrite=1
for f in *.json *.sptxt; do
  n=$((n + 1))
  name=${f%.*}
  "$SPOPT" validate "$f" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL $f: validate exit $rc, expected 2"; fail=1; continue; fi
  if ! cmp -s "$tmp/err" "$name.expected"; then
    echo "FAIL $f: message differs"; diff "$name.expected" "$tmp/err"; fail=1
  fi
  if [ $has_rewrite = 1 ]; then
    "$SPOPT" rewrite "$f" "$tmp/out.json" >/dev/null 2>"$tmp/err"; rc=$?
    lines=$(wc -l <"$tmp/err")
    if [ $rc -ne 2 ]; then echo "FAIL $f: rewrite exit $rc, expected 2"; fail=1; fi
    if [ -e "$tmp/out.json" ] || ls "$tmp" | grep -q '\.tmp\.'; then echo "FAIL $f: rewrite left output behind"; fail=1; fi
    if ! grep -q "^$f:" "$tmp/err"; then echo "FAIL $f: rewrite message does not name the file: $(cat "$tmp/err")"; fail=1; fi
    [ "$lines" -ge 1 ] || { echo "FAIL $f: rewrite printed no message"; fail=1; }
  fi
done
echo "bad inputs: $n cases, rewrite checked: $has_rewrite"
exit $fail
