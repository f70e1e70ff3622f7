#!/usr/bin/env bash
# A rewrite killed at a random moment leaves no stray file, and its destination is either
# untouched (the old bytes) or complete (the bytes of an uninterrupted rewrite).
#  - SIGTERM / SIGINT: the handler removes named temps (forced with SPOPT_NAMED_TEMPS=1, the path
#    taken where the filesystem has no O_TMPFILE) and the process still dies of the signal.
#  - SIGTERM during replay --dump: the staged temp folder is removed.
#  - SIGKILL (cannot be caught), 10 times: the temp is an unnamed O_TMPFILE file, so nothing is
#    left. Skips where the output folder's filesystem has no O_TMPFILE.
# Options for the lead: KILL_ROUNDS=N (default 10), KILL_LAYERS=N (job size, default 500 gpt
# layers, about 50 MB, a 1-2 s rewrite; 150 layers with SPOPT_SHORT_SWEEPS=1, the sanitizer stage,
# where a rewrite is ten times slower and the kill points fall just as densely).
set -u
SPOPT=$(realpath "$1"); SRC=$2
ROUNDS=${KILL_ROUNDS:-10}
default_layers=500
[ "${SPOPT_SHORT_SWEEPS:-0}" = 1 ] && default_layers=150
LAYERS=${KILL_LAYERS:-$default_layers}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! python3 -c "import os,sys; os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o600))" "$tmp" 2>/dev/null; then
  echo "SKIP kill_rewrite: the filesystem of $tmp has no O_TMPFILE (SIGKILL can leave a named temp there)"; exit 77
fi
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$SPOPT" gen gpt --tp 2 --layers "$LAYERS" --hidden 64 --heads 4 -o "$tmp/big.json" >/dev/null || { echo "FAIL: gen"; exit 1; }
start=$(date +%s%N)
"$SPOPT" rewrite "$tmp/big.json" "$tmp/complete.json" || { echo "FAIL: reference rewrite"; exit 1; }
full_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cp "$SRC/testdata/jobs/hand_tp2_legacy.json" "$tmp/old.json"
mkdir "$tmp/out"

# The destination folder must hold the destination and nothing else; the destination must be
# the old bytes or the complete ones. Prints which.
verdict() {  # WHAT
  local extra; extra=$(ls -A "$tmp/out" | grep -vx dest.json)
  [ -z "$extra" ] && [ -z "$(ls "$tmp" | grep '\.tmp\.')" ] || { bad "$1: stray files: $extra $(ls "$tmp" | grep '\.tmp\.')"; rm -f "$tmp/out/"*.tmp.*; }
  if cmp -s "$tmp/out/dest.json" "$tmp/old.json"; then echo untouched
  elif cmp -s "$tmp/out/dest.json" "$tmp/complete.json"; then echo complete
  else bad "$1: destination is neither the old nor the complete output ($(stat -c %s "$tmp/out/dest.json") bytes)"; echo broken
  fi
}

# Kills `sp-opt rewrite` after MS milliseconds with SIGNAL; sets rc, and phase: "temp-open" when the
# process held its temp output open at the kill (staged right after loading) (an unnamed one shows in /proc as "#N (deleted)").
# Started through python, which gives SIGINT back its default action (a background job of a
# script has it ignored, and sp-opt leaves an ignored signal ignored).
kill_after() {  # SIGNAL MS [ENV=VALUE]
  cp "$tmp/old.json" "$tmp/out/dest.json"
  env ${3:-X=} python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$SPOPT" rewrite "$tmp/big.json" "$tmp/out/dest.json" 2>/dev/null &
  local pid=$!
  sleep "$(awk -v ms="$2" 'BEGIN { printf "%.3f", ms / 1000 }')"
  phase=other
  ls -l /proc/$pid/fd 2>/dev/null | grep -q -- "-> $tmp/out/" && phase=temp-open
  kill -s "$1" $pid 2>/dev/null
  { wait $pid; } 2>/dev/null; rc=$?
}

# Random moments over the whole run (load, passes, write), and a little past its end.
moment() { echo $(( RANDOM % (full_ms * 11 / 10 + 1) )); }

declare -A seen=()
# SIGTERM and SIGINT with named temps: the handler must remove them.
for sig in TERM INT HUP TERM INT; do
  ms=$(moment)
  kill_after $sig "$ms" SPOPT_NAMED_TEMPS=1
  v=$(verdict "SIG$sig at $ms ms")
  echo "SIG$sig at ${ms} ms (named temps, $phase): exit $rc, destination $v"
  if [ "$v" = untouched ] && [ $rc -eq 0 ]; then bad "SIG$sig: exit 0 but destination untouched"; fi
  if [ $rc -ne 0 ] && [ $rc -ne $((128 + $(kill -l $sig))) ]; then bad "SIG$sig: exit $rc, expected death by the signal"; fi
done
# One SIGTERM surely mid-write: as soon as the destination folder shows the named temp.
cp "$tmp/old.json" "$tmp/out/dest.json"
SPOPT_NAMED_TEMPS=1 "$SPOPT" rewrite "$tmp/big.json" "$tmp/out/dest.json" 2>/dev/null &
pid=$!
for _ in $(seq 1 400); do ls "$tmp/out" | grep -q '\.tmp\.' && break; sleep 0.01; done
had_temp=$(ls "$tmp/out" | grep -c '\.tmp\.')
kill -TERM $pid; { wait $pid; } 2>/dev/null; rc=$?
v=$(verdict "SIGTERM mid-write")
echo "SIGTERM with the named temp present ($had_temp): exit $rc, destination $v"
[ "$had_temp" -ge 1 ] || bad "SIGTERM mid-write: never saw the named temp"
[ $rc -eq 143 ] || bad "SIGTERM mid-write: exit $rc, expected 143"

# replay --dump stages a temp folder (no folder can be unnamed): SIGTERM while the run goes on
# must remove it. Killed once the temp folder shows, while the ranks run.
"$SPOPT" gen mlp --tp 2 --layers 2 --hidden 512 --batch 8 --seq 256 -o "$tmp/mlp.json" >/dev/null || bad "gen mlp"
"$SPOPT" replay "$tmp/mlp.json" --dump "$tmp/out/dump" >/dev/null 2>&1 &
pid=$!
seen_temp=0
for _ in $(seq 1 2000); do
  if ls -d "$tmp"/out/.dump.tmp.* >/dev/null 2>&1; then seen_temp=1; break; fi
  sleep 0.005
done
sleep 0.2
kill -TERM $pid 2>/dev/null; { wait $pid; } 2>/dev/null; rc=$?
left=$(ls -A "$tmp/out" | grep -vx dest.json)
echo "SIGTERM during replay --dump (temp folder seen: $seen_temp): exit $rc, left: ${left:-nothing}"
[ $seen_temp = 1 ] || bad "replay --dump: the temp folder never showed"
if [ $rc -eq 143 ]; then [ -z "$left" ] || bad "replay --dump SIGTERM left: $left"
else echo "note: the replay ended before the signal (exit $rc)"; fi
rm -rf "$tmp/out/dump"

# SIGKILL, ROUNDS times at random moments, with the default (unnamed) temps.
writing=0
for i in $(seq 1 "$ROUNDS"); do
  ms=$(moment)
  kill_after KILL "$ms"
  v=$(verdict "SIGKILL $i at $ms ms")
  seen[$v]=$(( ${seen[$v]:-0} + 1 ))
  [ $phase = temp-open ] && writing=$((writing + 1))
  echo "SIGKILL $i at ${ms} ms ($phase): exit $rc, destination $v"
done
echo "SIGKILL x$ROUNDS over a ${full_ms} ms rewrite: $writing with the temp output open (staged after load); untouched ${seen[untouched]:-0}, complete ${seen[complete]:-0}, broken ${seen[broken]:-0}; stray files: $([ $fail = 0 ] && echo none || echo some)"
# A complete destination must also load and verify (not only match bytes).
"$SPOPT" validate "$tmp/complete.json" >/dev/null || bad "the complete output does not validate"
exit $fail
