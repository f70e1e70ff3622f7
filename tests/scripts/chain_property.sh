#!/bin/bash
# Property test of the whole chain on generated jobs: a random model (gpt, mlp, llama), shape,
# tensor and data parallelism, dialect (legacy, current, PIR), dtype, AMP, optimizer and
# vocab-parallel head; the default chain with random options on its passes (max-in-flight,
# window, ring-reorder, phases, split-min-ns, memory-cap; decompose's mode and phases; regather's
# mode and min-bytes; recompute-activations inserted or not), scheduled for a random preset (host
# with a fixed calibration and an emulated link, or a GPU preset). Each rewrite must validate
# --strict and replay to the input's results (`check`); then go through one of Paddle's formats
# (pir-json, pir-text, pdmodel: export, import with the job's rings) or the text form (print) and
# replay to the same results again, and analyze. A gen refusal must be a one-line exit 2. The jobs
# are fixed by the seed (SPOPT_CHAIN_SEED, default 1); 24 jobs (10 with SPOPT_SHORT_SWEEPS=1).
set -u
SP_OPT=$1 SRC=$2
"$SP_OPT" --help | grep -qE "^  gen +" || { echo "no gen subcommand"; exit 77; }
export SPOPT_HOST_CALIBRATION=$SRC/tests/passes/Inputs/host-2-ranks.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
RANDOM=${SPOPT_CHAIN_SEED:-1}
count=24
[ "${SPOPT_SHORT_SWEEPS:-0}" = 1 ] && count=10
# pick VAR CHOICE...: sets VAR in this shell (a command substitution's subshell would reseed RANDOM,
# and the jobs would not follow from the seed).
pick() { local var=$1; shift; local a=("$@"); printf -v "$var" '%s' "${a[RANDOM % ${#a[@]}]}"; }
ok=0 bad=0 refused=0
fail() { echo "FAIL $*"; bad=$((bad + 1)); }
for i in $(seq "$count"); do
  pick model gpt gpt mlp llama; pick tp 2 2 4; pick dp 1 1 2
  [ $((tp * dp)) -gt 4 ] && dp=1
  pick dialect legacy current pir; pick sp "" --sequence-parallel --sequence-parallel
  pick layers 1 2; pick hidden 16 32 64; pick heads 4 8; pick seq 8 16; pick batch 2 4
  pick dtype float32 float32 float64 float16 bfloat16; pick amp none none bf16; pick opt sgd sgd adamw none
  pick vocab "" "" "--vocab 32"
  [ "$model" = mlp ] && vocab=""
  [ "$amp" = bf16 ] && dtype=float32
  gen="gen $model --tp $tp --dp $dp --layers $layers --hidden $hidden --heads $heads --seq $seq --batch $batch --dtype $dtype"
  gen+=" --amp $amp --optimizer $opt --dialect $dialect $sp $vocab"
  "$SP_OPT" $gen -o "$tmp/in.json" > "$tmp/gen.txt" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    if [ $rc -eq 2 ] && [ "$(wc -l < "$tmp/gen.txt")" -eq 1 ]; then refused=$((refused + 1)); [ -n "${VERBOSE:-}" ] && cat "$tmp/gen.txt"; continue; fi
    fail "$gen: exit $rc: $(head -c 300 "$tmp/gen.txt")"; continue
  fi
  pick overlap "" "" max-in-flight=1 max-in-flight=3 window=16 ring-reorder=false phases=all split-min-ns=0 memory-cap=0
  pick decompose "" "" mode=off phases=all
  pick regather "" "" mode=auto min-bytes=4096
  pick recompute "" "" "" ",recompute-activations"
  chain="fuse-allreduce-split,regather-activations${regather:+{$regather\}}$recompute"
  chain+=",decompose-collective-matmul${decompose:+{$decompose\}},overlap-collectives${overlap:+{$overlap\}}"
  pick preset "" "" "--preset host --link 0.05,100" "--preset a100-nvlink"
  # The fixed calibration was measured with 2 ranks: host only schedules 2-rank jobs here.
  [ $((tp * dp)) -ne 2 ] && [ "${preset#--preset host}" != "$preset" ] && preset="--preset h200-nvlink --link 0.05,100"
  what="$gen | --passes=$chain $preset"
  "$SP_OPT" rewrite "$tmp/in.json" "$tmp/out.json" --passes="$chain" $preset > "$tmp/log" 2>&1 || { fail "rewrite $what: $(head -c 400 "$tmp/log")"; continue; }
  "$SP_OPT" validate --strict "$tmp/out.json" > "$tmp/log" 2>&1 || { fail "validate $what: $(head -c 400 "$tmp/log")"; continue; }
  "$SP_OPT" check "$tmp/in.json" "$tmp/out.json" > "$tmp/log" 2>&1 || { fail "check $what: $(tail -c 400 "$tmp/log")"; continue; }
  pick form pir-json pir-text pdmodel text
  rm -rf "$tmp/exp" && mkdir "$tmp/exp"
  if [ "$form" = text ]; then
    back=$tmp/back.sptxt
    "$SP_OPT" print "$tmp/out.json" > "$back" 2> "$tmp/log" || { fail "print $what: $(head -c 300 "$tmp/log")"; continue; }
  else
    back=$tmp/back.json
    "$SP_OPT" export "$tmp/out.json" --to "$form" -o "$tmp/exp/" > "$tmp/log" 2>&1 || { fail "export $form $what: $(head -c 300 "$tmp/log")"; continue; }
    rings=$(python3 -c "import json, sys; print(' '.join('--ring %d=%s' % (g['ring_id'], ','.join(map(str, g['ranks']))) for g in json.load(open(sys.argv[1]))['process_groups']))" "$tmp/out.json")
    # rank_0, rank_1, ..., rank_10: in rank order
    mapfile -t files < <(ls "$tmp/exp" | sort -t_ -k2 -n | sed "s|^|$tmp/exp/|")
    "$SP_OPT" import "${files[@]}" $rings -o "$back" > "$tmp/log" 2>&1 || { fail "import $form $what: $(head -c 300 "$tmp/log")"; continue; }
  fi
  "$SP_OPT" check "$tmp/out.json" "$back" > "$tmp/log" 2>&1 || { fail "round trip $form $what: $(tail -c 400 "$tmp/log")"; continue; }
  "$SP_OPT" analyze "$tmp/out.json" > /dev/null 2> "$tmp/log" || { fail "analyze $what: $(head -c 300 "$tmp/log")"; continue; }
  ok=$((ok + 1))
done
echo "chain property: $ok jobs rewritten, proven and round-tripped, $refused refused by gen (one-line exit 2), $bad failing"
[ "$bad" -eq 0 ] && [ "$ok" -gt $((count / 2)) ]
