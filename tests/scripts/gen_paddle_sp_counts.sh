#!/usr/bin/env bash
# What Paddle's test_static_sequence_parallel_pass.py asserts of its program, on ours:
# `gen mlp --tp 4 --layers 2 --sequence-parallel` rewritten by the default pipeline (the
# all-reduce+split fusion) holds on rank 2 exactly 4 all-gathers, 4 reduce-scatters and
# 4 all-reduces, all with nranks 4 and one ring id, the all-reduces summing the gradients of the
# layer_norm scales. Both dialects. With `check` in the build, the rewrite must also replay the same.
# Needs `sp-opt rewrite` (exit 77 where this build lacks it).
# usage: gen_paddle_sp_counts.sh SP_OPT SOURCE_DIR
set -euo pipefail
sp_opt=$1
if ! "$sp_opt" --help | grep -E "^  rewrite " > /dev/null; then
  echo "skipped: this sp-opt has no rewrite subcommand yet"
  exit 77
fi
has_check=0
"$sp_opt" --help | grep -E "^  check " > /dev/null && has_check=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # WHAT GOT WANT
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: got $2, want $3"
    fail=1
  fi
}
for dialect in legacy current; do
  job="$tmp/mlp_$dialect.json"
  out="$tmp/mlp_${dialect}_fused.json"
  "$sp_opt" gen mlp --tp 4 --layers 2 --sequence-parallel --dialect "$dialect" -o "$job" > /dev/null
  "$sp_opt" rewrite "$job" "$out" --passes=fuse-allreduce-split > /dev/null
  ops() { jq -c '.programs[] | select(.rank == 2) | .blocks[0].ops[]' "$out"; }
  count() { ops | jq -r '.type' | grep -cxE "$1" || true; }
  expect "$dialect all-gathers" "$(count 'c_allgather|all_gather')" 4
  expect "$dialect reduce-scatters" "$(count 'c_reducescatter|reduce_scatter')" 4
  expect "$dialect all-reduces" "$(count 'c_allreduce_sum|all_reduce')" 4
  expect "$dialect reshard splits left" "$(ops | jq -r 'select(.type == "split" and (.attrs.op_namescope | contains("/auto_parallel/reshard"))) | .type' | wc -l)" 0
  comm='c_allgather|all_gather|c_reducescatter|reduce_scatter|c_allreduce_sum|all_reduce'
  expect "$dialect nranks" "$(ops | jq -r "select(.type | test(\"^($comm)\$\")) | .attrs.nranks" | sort -u | tr '\n' ' ')" "4 "
  expect "$dialect ring ids" "$(ops | jq -r "select(.type | test(\"^($comm)\$\")) | .attrs.ring_id" | sort -u | tr '\n' ' ')" "0 "
  expect "$dialect all-reduced vars" \
    "$(ops | jq -r 'select(.type == "c_allreduce_sum" or .type == "all_reduce") | (.inputs.X // .inputs.x)[0]' | sort | tr '\n' ' ')" \
    "layer_norm_0.w_0@GRAD layer_norm_1.w_0@GRAD layer_norm_2.w_0@GRAD layer_norm_3.w_0@GRAD "
  checked=""
  if (( has_check )); then
    if "$sp_opt" check "$job" "$out" > "$tmp/check.txt"; then
      checked="; check passed"
    else
      echo "FAIL: $dialect: check between the job and its rewrite"
      cat "$tmp/check.txt"
      fail=1
    fi
  fi
  echo "$dialect: rank 2 after fusion: $(count 'c_allgather|all_gather') all-gathers, $(count 'c_reducescatter|reduce_scatter') reduce-scatters, $(count 'c_allreduce_sum|all_reduce') all-reduces$checked"
done
exit $fail
