#!/bin/bash
# Property test of decompose-collective-matmul: generated jobs (gen gpt | llama, tp 2|4|8, legacy
# or PIR, sequence parallel, 1-2 layers, fused by fuse-allreduce-split or not: unfused jobs keep
# all-reduce + split, so only their all-gathers are sites), each decomposed with mode=always and
# a random choice of phases (forward | all) and forms (both | all-gather | reduce-scatter), before
# or after regather-activations, with or without overlap-collectives after it. Each must be valid
# (verifier and hang check), decompose something, and `check` against the same chain without the
# pass within check's tolerance (local backend); jobs whose chunks are whole 256-row blocks of
# replay's GEMM (seq 512 x batch 4 rows: runtime/kernels/blas.h) and only all-gathers decomposed
# must be bitwise equal (--rtol 0 --atol 0). The rewrite must be a ring: every decomposed site's
# transfers are sends and receives, no rooted collective. ctest runs COLLECTIVE_MATMUL_JOBS
# (default 4) random ones; the seed is printed, COLLECTIVE_MATMUL_SEED repeats a run.
# Not covered: chunkings other than one chunk per ring member (the pass has no other).
set -u
SP_OPT=$1
count=${COLLECTIVE_MATMUL_JOBS:-4}
seed=${COLLECTIVE_MATMUL_SEED:-$RANDOM}
RANDOM=$seed
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
echo "seed $seed, $count jobs"
fail=0
for i in $(seq "$count"); do
  model=$(pick gpt llama) tp=$(pick 2 4 8) dialect=$(pick legacy pir) layers=$(pick 1 2) rows=$(pick "16 2" "512 4")
  fused=$(pick yes no) phases=$(pick forward all) forms=$(pick both all-gather reduce-scatter) overlap=$(pick yes no)
  [ "$fused" = no ] && forms=both
  job=$tmp/j$i.json
  "$SP_OPT" gen "$model" --tp "$tp" --dialect "$dialect" --layers "$layers" --hidden 32 --heads 8 --seq ${rows% *} --batch ${rows#* } \
    --sequence-parallel -o "$job" > /dev/null || { echo "FAIL gen $model tp $tp"; fail=1; continue; }
  base=regather-activations
  [ "$fused" = yes ] && base="fuse-allreduce-split,$base"
  tail=""
  [ "$overlap" = yes ] && tail=",overlap-collectives"
  pass="decompose-collective-matmul{mode=always,memory-cap=10,phases=$phases,forms=$forms}"
  what="$model tp $tp $dialect layers $layers seq x batch $rows fused $fused overlap $overlap $pass"
  "$SP_OPT" rewrite "$job" "$tmp/b$i.json" --passes="$base$tail" 2> /dev/null || { echo "FAIL rewrite before: $what"; fail=1; continue; }
  stats=$("$SP_OPT" rewrite "$job" "$tmp/a$i.json" --passes="$base,$pass$tail" --stats 2>&1) ||
    { echo "FAIL rewrite: $what"; echo "$stats" | tail -3; fail=1; continue; }
  if ! echo "$stats" | grep -q "figure decomposed-"; then echo "FAIL nothing decomposed: $what"; fail=1; continue; fi
  "$SP_OPT" validate "$tmp/a$i.json" > /dev/null 2>&1 || { echo "FAIL validate: $what"; fail=1; continue; }
  if grep -q '"c_broadcast"\|"c_reduce_sum"\|"pd_op.c_broadcast"\|"pd_op.c_reduce_sum"' "$tmp/a$i.json" ||
     ! grep -q '"send_v2"\|"pd_op.p_send"' "$tmp/a$i.json"; then
    echo "FAIL not a ring of send/recv: $what"; fail=1; continue
  fi
  tol=()
  [ "$forms" = all-gather ] && [ "$rows" = "512 4" ] && tol=(--rtol 0 --atol 0)
  out=$("$SP_OPT" check "$tmp/b$i.json" "$tmp/a$i.json" "${tol[@]}" 2>&1) || { echo "FAIL check ${tol[*]}: $what"; echo "$out" | tail -2; fail=1; continue; }
  echo "ok: $what: $(echo "$out" | tail -1)"
done
exit $fail
