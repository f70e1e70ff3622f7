#!/bin/bash
# No false alarms: generated jobs (gen mlp|gpt, tp 2|4, 1-3 layers, sequence parallel or not,
# legacy or current dialect), each after the default chain or one of its overlap-collectives
# variants (windows, phases, max-in-flight), must be `valid` for validate (hang check included)
# and must replay to the end. ctest runs a random handful (NO_FALSE_ALARM_JOBS, default 6; the seed
# is printed, NO_FALSE_ALARM_SEED repeats a run); `NO_FALSE_ALARM_JOBS=200` is the full run.
set -u
SP_OPT=$1 SRC=$2
count=${NO_FALSE_ALARM_JOBS:-6}
seed=${NO_FALSE_ALARM_SEED:-$RANDOM}
RANDOM=$seed
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
chains=(
  "sequence-parallel"
  "fuse-allreduce-split,regather-activations,overlap-collectives{window=0,split-min-ns=0}"
  "fuse-allreduce-split,regather-activations,overlap-collectives{window=4,split-min-ns=0}"
  "fuse-allreduce-split,regather-activations,overlap-collectives{window=16,max-in-flight=1,split-min-ns=0}"
  "fuse-allreduce-split,regather-activations,overlap-collectives{phases=backward,split-min-ns=0}"
  "fuse-allreduce-split,regather-activations,overlap-collectives{phases=all,max-in-flight=2,split-min-ns=0}"
  "fuse-allreduce-split,regather-activations,overlap-collectives{phases=all,window=-1,max-in-flight=3,split-min-ns=0}"
  "fuse-allreduce-split,overlap-collectives{split-grads=false}"
  "overlap-collectives"
)
fail=0 valid=0 replayed=0 warned=0
echo "seed $seed, $count jobs"
for i in $(seq "$count"); do
  models=(mlp gpt); model=${models[RANDOM % 2]}
  tps=(2 4); tp=${tps[RANDOM % 2]}
  layers=$((RANDOM % 3 + 1))
  dialects=(legacy current); dialect=${dialects[RANDOM % 2]}
  sp=""; ((RANDOM % 2)) && sp=--sequence-parallel
  chain=${chains[RANDOM % ${#chains[@]}]}
  what="gen $model --tp $tp --layers $layers $sp --dialect $dialect; --passes=$chain"
  extra=(); [ "$model" = gpt ] && extra=(--heads 4)
  "$SP_OPT" gen "$model" --tp "$tp" --layers "$layers" $sp --dialect "$dialect" --hidden 64 --seq 16 --batch 4 "${extra[@]}" \
    -o "$tmp/in.json" > /dev/null 2> "$tmp/err" || { echo "FAIL: $what: gen: $(cat "$tmp/err")"; fail=1; continue; }
  "$SP_OPT" rewrite "$tmp/in.json" "$tmp/out.json" --passes="$chain" 2> "$tmp/err" || { echo "FAIL: $what: rewrite: $(head -3 "$tmp/err")"; fail=1; continue; }
  if "$SP_OPT" validate "$tmp/out.json" > /dev/null 2> "$tmp/err"; then
    valid=$((valid + 1))
    grep -q "^warning:" "$tmp/err" && { warned=$((warned + 1)); echo "note: $what: $(head -1 "$tmp/err")"; }
  else
    echo "FAIL: $what: validate: $(head -3 "$tmp/err")"; fail=1
  fi
  if timeout 300 "$SP_OPT" replay "$tmp/out.json" --timeout 60 > /dev/null 2> "$tmp/err"; then
    replayed=$((replayed + 1))
  else
    echo "FAIL: $what: replay: $(tail -3 "$tmp/err")"; fail=1
  fi
done
echo "$count jobs: $valid valid ($warned with a lost-dependency warning), $replayed replayed to the end"
exit $fail
