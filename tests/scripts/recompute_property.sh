#!/bin/bash
# Property test of recompute-activations over generated jobs (gen gpt|mlp|llama, tp 2|4, 1-3
# layers, sequence parallel or not, legacy or PIR dialect, dropout on): after
# fuse-allreduce-split,regather-activations, a random policy (core-attention; budget= a random
# point between the job's peak and the lowest peak the pass reaches, greedy, exact or auto; list
# with a random pattern; all) must give a job that validates, replays bitwise equal to the input
# (check --rtol 0 --atol 0: every fetched and persistable var, dropout masks included), holds no
# more activation bytes per rank (analyze), and, under policy=budget, whose peak is no higher.
# ctest runs a random handful (RECOMPUTE_PROPERTY_JOBS, default 4; RECOMPUTE_PROPERTY_SEED repeats
# a run, the seed is printed).
set -u
SP_OPT=$1
count=${RECOMPUTE_PROPERTY_JOBS:-4}
seed=${RECOMPUTE_PROPERTY_SEED:-$RANDOM}
RANDOM=$seed
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
patterns=("softmax>dropout" "gelu" "layer_norm" "matmul>scale>softmax>dropout;gelu" "dropout" "rms_norm;silu" "softmax")
stat() { sed -n "s/.*figure $1: \([0-9]*\).*/\1/p" "$2" | head -1; }
activations() { python3 -c 'import json,sys; print(max(r["activations"]["total_bytes"] for r in json.load(open(sys.argv[1]))["ranks"]))' "$1"; }
fail=0
echo "seed $seed, $count jobs"
for i in $(seq "$count"); do
  models=(gpt gpt mlp llama); model=${models[RANDOM % 4]}
  tps=(2 4); tp=${tps[RANDOM % 2]}
  layers=$((RANDOM % 3 + 1))
  dialects=(legacy pir); dialect=${dialects[RANDOM % 2]}
  sp=""; ((RANDOM % 2)) && sp=--sequence-parallel
  extra=(); [ "$model" != mlp ] && extra=(--heads 4 --seq 16)
  what="gen $model --tp $tp --layers $layers $sp --dialect $dialect ${extra[*]} --hidden 32 --batch 2"
  "$SP_OPT" gen "$model" --tp "$tp" --layers "$layers" $sp --dialect "$dialect" --hidden 32 --batch 2 "${extra[@]}" \
    -o "$tmp/in.json" > /dev/null 2> "$tmp/err" || { echo "FAIL: $what: gen: $(cat "$tmp/err")"; fail=1; continue; }
  "$SP_OPT" rewrite "$tmp/in.json" "$tmp/mid.json" --passes=fuse-allreduce-split,regather-activations 2> "$tmp/err" ||
    { echo "FAIL: $what: chain: $(head -3 "$tmp/err")"; fail=1; continue; }
  policy="recompute-activations"
  case $((RANDOM % 4)) in
    1) "$SP_OPT" rewrite "$tmp/mid.json" "$tmp/full.json" --passes="recompute-activations{policy=budget,budget=1}" --stats > /dev/null 2> "$tmp/full.stats"
       hi=$(stat peak-bytes-before "$tmp/full.stats"); lo=$(stat peak-bytes-after "$tmp/full.stats")
       # Exact tries every subset: only one-layer jobs stay within exact-limit (up to ~20 candidates
       # a rank; a 3-layer tp 4 gpt has 55), the others draw auto or greedy.
       searches=(auto greedy exact); ((layers > 1)) && searches=(auto greedy)
       policy="recompute-activations{policy=budget,budget=$((lo + (hi - lo) * (RANDOM % 100) / 100 + 1)),search=${searches[RANDOM % ${#searches[@]}]},exact-limit=24}" ;;
    2) policy="recompute-activations{policy=list,ops=${patterns[RANDOM % ${#patterns[@]}]}}" ;;
    3) policy="recompute-activations{policy=all}" ;;
  esac
  what="$what; --passes=$policy"
  "$SP_OPT" rewrite "$tmp/mid.json" "$tmp/out.json" --passes="$policy" --stats > /dev/null 2> "$tmp/stats" ||
    { echo "FAIL: $what: rewrite: $(head -3 "$tmp/stats")"; fail=1; continue; }
  "$SP_OPT" validate "$tmp/out.json" > /dev/null 2> "$tmp/err" || { echo "FAIL: $what: validate: $(head -3 "$tmp/err")"; fail=1; continue; }
  out=$("$SP_OPT" check "$tmp/mid.json" "$tmp/out.json" --rtol 0 --atol 0 2>&1) || { echo "FAIL: $what: check: $(echo "$out" | tail -3)"; fail=1; continue; }
  "$SP_OPT" analyze "$tmp/mid.json" --format json -o "$tmp/mid.a.json" && "$SP_OPT" analyze "$tmp/out.json" --format json -o "$tmp/out.a.json" ||
    { echo "FAIL: $what: analyze"; fail=1; continue; }
  a_mid=$(activations "$tmp/mid.a.json") a_out=$(activations "$tmp/out.a.json")
  [ "$a_out" -le "$a_mid" ] || { echo "FAIL: $what: activation bytes rose $a_mid -> $a_out"; fail=1; continue; }
  before=$(stat peak-bytes-before "$tmp/stats") after=$(stat peak-bytes-after "$tmp/stats")
  if [[ $policy == *budget* ]] && [ "$after" -gt "$before" ]; then echo "FAIL: $what: peak rose $before -> $after"; fail=1; continue; fi
  echo "ok: $what: $(stat segments-recomputed "$tmp/stats") segments, activations $a_mid -> $a_out, peak $before -> $after; $out"
done
exit $fail
