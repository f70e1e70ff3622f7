#!/bin/bash
# Property test of overlap-collectives: generated training steps (gen gpt / mlp, tp 2 and 4, dp 1
# and 2, both collective dialects, with and without sequence parallelism) rewritten by
# fuse-allreduce-split,overlap-collectives must pass the verifier (rewrite exits 0) and `sp-opt
# check` against the input on the local backend (replay before and after, same inputs). A job whose
# schedule moved nothing and split nothing would pass trivially: at least one job must have had
# collectives moved to comm streams and matmul grads split, which the --report shows. These jobs'
# GEMMs take nanoseconds under h100-nvlink, so split-min-ns=0 splits them all.
set -u
SP_OPT=$1
"$SP_OPT" --help | grep -qE "^  gen +" || { echo "no gen subcommand"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 split=0
run() {
  local name=$1; shift
  if ! out=$("$SP_OPT" gen "$@" -o "$tmp/in.json" 2>&1 &&
             "$SP_OPT" rewrite "$tmp/in.json" "$tmp/out.json" '--passes=fuse-allreduce-split,overlap-collectives{split-min-ns=0}' \
               --report "$tmp/rep.json" 2>&1 &&
             "$SP_OPT" check "$tmp/in.json" "$tmp/out.json" 2>&1); then
    echo "FAIL $name: $out"; fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
  grep -q '"matmul-grad-split"' "$tmp/rep.json" && grep -q 'comm_ring_' "$tmp/out.json" && split=$((split + 1))
}
for model in gpt mlp; do
  for tp in 2 4; do
    for dp in 1 2; do
      [ $((tp * dp)) -le 4 ] || continue
      for dialect in legacy current; do
        for sp in "" --sequence-parallel; do
          run "$model tp$tp dp$dp $dialect $sp" "$model" --tp "$tp" --dp "$dp" --layers 2 --hidden 32 --heads 4 \
            --seq 8 --batch 2 --dialect "$dialect" $sp
        done
      done
    done
  done
done
# Small windows (the memory cap's retries shrink the window to these) on every phase choice: the
# scheduler must finish and the result must still check.
windows=0
for model in gpt mlp; do
  for tp in 2 4; do
    "$SP_OPT" gen "$model" --tp "$tp" --layers 1 --sequence-parallel -o "$tmp/w.json" > /dev/null || { echo "FAIL: gen $model tp$tp"; fail=$((fail + 1)); continue; }
    for phases in backward backward+optimize all; do
      for w in 1 2 3 8; do
        if ! out=$("$SP_OPT" rewrite "$tmp/w.json" "$tmp/wo.json" \
                   --passes="fuse-allreduce-split,regather-activations,overlap-collectives{phases=$phases,window=$w,split-min-ns=0}" 2>&1 &&
                   "$SP_OPT" check "$tmp/w.json" "$tmp/wo.json" 2>&1); then
          echo "FAIL $model tp$tp phases=$phases window=$w: $out"; fail=$((fail + 1))
        fi
        windows=$((windows + 1))
      done
    done
  done
done
echo "overlap_property: $windows small-window schedules checked"
echo "overlap_property: $pass jobs pass check after fuse,overlap ($split with split grads on comm streams), $fail failed"
[ $split -gt 0 ] || { echo "FAIL: no job was rewritten"; exit 1; }
[ $fail -eq 0 ]
