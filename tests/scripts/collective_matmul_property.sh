#!/bin/bash
# Property test of decompose-collective-matmul: generated jobs (gen gpt | llama, tp 2|4|8, legacy
# or PIR, sequence parallel, 1-2 layers, fused by fuse-allreduce-split or not: unfused jobs keep
# all-reduce + split, so only their all-gathers are sites), each decomposed with mode=always, a
# random chunking (chunks= pieces per shard: a divisor of the shard's seq/tp rows up to 8, 0 (the
# cost model's choice per site) or, one job in five, a count that does not divide them), a random
# direction (directions= one | both | auto: both ways is one way on tp 2), route (ring | direct |
# auto: direct for reduce-scatter sites only) and of phases (forward | all)
# and forms (both | all-gather | reduce-scatter), before or after regather-activations, with or
# without overlap-collectives after it. A chunking that divides must decompose something, be valid
# (verifier and hang check) and a ring (sends and receives, no rooted collective, (tp-1) x chunks
# sends a decomposed site, both ways or one, as --explain says for each site: the chunks and
# direction forced, or chosen), and `check`
# against the same chain without the pass within check's tolerance (local backend); bitwise
# (--rtol 0 --atol 0) where only all-gathers were decomposed and every piece is whole 256-row
# blocks of replay's GEMM (runtime/kernels/blas.h: seq/tp/chunks x batch a multiple of 256). One
# that does not divide must decompose nothing and say chunks-indivisible in --explain. ctest runs
# COLLECTIVE_MATMUL_JOBS (default 4) random ones; the seed is printed, COLLECTIVE_MATMUL_SEED
# repeats a run.
set -u
SP_OPT=$1
count=${COLLECTIVE_MATMUL_JOBS:-4}
seed=${COLLECTIVE_MATMUL_SEED:-$RANDOM}
RANDOM=$seed
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# pick VAR CHOICE...: sets VAR in this shell; $(...) would draw in a subshell, which bash 5
# reseeds, and the printed seed would not repeat the run.
pick() { local a=("${@:2}"); printf -v "$1" '%s' "${a[RANDOM % ${#a[@]}]}"; }
echo "seed $seed, $count jobs"
fail=0
for i in $(seq "$count"); do
  pick model gpt llama; pick tp 2 4 8; pick dialect legacy pir; pick layers 1 2; pick rows "16 2" "512 4"
  pick fused yes no; pick phases forward all; pick forms both all-gather reduce-scatter; pick overlap yes no
  [ "$fused" = no ] && forms=both
  seq=${rows% *} batch=${rows#* } shard=$((${rows% *} / tp))
  divisors=(); for n in 1 2 4 8; do [ $((shard % n)) = 0 ] && divisors+=("$n"); done
  pick chunks "${divisors[@]}" 0; divides=yes; pick directions one both auto; pick route ring direct auto
  if [ $((RANDOM % 5)) = 0 ]; then chunks=3; while [ $((shard % chunks)) = 0 ]; do chunks=$((chunks + 1)); done; divides=no; fi
  job=$tmp/j$i.json
  "$SP_OPT" gen "$model" --tp "$tp" --dialect "$dialect" --layers "$layers" --hidden 32 --heads 8 --seq "$seq" --batch "$batch" \
    --sequence-parallel -o "$job" > /dev/null || { echo "FAIL gen $model tp $tp"; fail=1; continue; }
  base=regather-activations
  [ "$fused" = yes ] && base="fuse-allreduce-split,$base"
  tail=""
  [ "$overlap" = yes ] && tail=",overlap-collectives"
  pass="decompose-collective-matmul{mode=always,memory-cap=10,phases=$phases,forms=$forms,chunks=$chunks,directions=$directions,route=$route}"
  what="$model tp $tp $dialect layers $layers seq x batch $rows fused $fused overlap $overlap $pass"
  "$SP_OPT" rewrite "$job" "$tmp/b$i.json" --passes="$base$tail" 2> /dev/null || { echo "FAIL rewrite before: $what"; fail=1; continue; }
  stats=$("$SP_OPT" rewrite "$job" "$tmp/a$i.json" --passes="$base,$pass$tail" --stats --explain 2>&1) ||
    { echo "FAIL rewrite: $what"; echo "$stats" | tail -3; fail=1; continue; }
  if [ "$divides" = no ]; then
    if echo "$stats" | grep -q "figure decomposed-" || ! echo "$stats" | grep -q "refused \[chunks-indivisible\]: .* $shard rows"; then
      echo "FAIL indivisible chunking not refused: $what"; fail=1; continue
    fi
    "$SP_OPT" validate "$tmp/a$i.json" > /dev/null 2>&1 || { echo "FAIL validate: $what"; fail=1; continue; }
    echo "ok: $what: refused, $shard rows do not divide by $chunks"
    continue
  fi
  if ! echo "$stats" | grep -q "figure decomposed-"; then echo "FAIL nothing decomposed: $what"; fail=1; continue; fi
  "$SP_OPT" validate "$tmp/a$i.json" > /dev/null 2>&1 || { echo "FAIL validate: $what"; fail=1; continue; }
  if grep -q '"c_broadcast"\|"c_reduce_sum"\|"pd_op.c_broadcast"\|"pd_op.c_reduce_sum"' "$tmp/a$i.json" ||
     ! grep -q '"send_v2"\|"pd_op.p_send"' "$tmp/a$i.json"; then
    echo "FAIL not a ring of send/recv: $what"; fail=1; continue
  fi
  # Every decomposed site on every rank: (tp-1) x chunks exchanges, one send each, whichever way
  # round (t/2 steps both ways send a piece each way but the last on an even ring: tp-1 in all).
  ways=$(echo "$stats" | sed -n 's/.*rewritten, note \[ring\]:.*; chunks=\([0-9]*\), \(one\|both\) ways*\(, direct\)*$/\1 \2/p')
  expected=$(echo "$ways" | awk -v t="$tp" '{ s += (t - 1) * $1 } END { print s + 0 }')
  sends=$(grep -o '"send_v2"\|"pd_op.p_send"' "$tmp/a$i.json" | wc -l)
  sites=$(echo "$stats" | sed -n 's/.*figure decomposed-[a-z-]*: \([0-9]*\).*/\1/p' | paste -sd+ | bc)
  if [ "$(echo "$ways" | grep -c .)" != "$sites" ] || [ "$sends" != "$expected" ]; then
    echo "FAIL $sends sends, not $expected for $sites sites ($tp - 1 steps x their chunks): $what"; fail=1; continue
  fi
  want_way=$directions; [ "$tp" = 2 ] && want_way=one
  if [ "$want_way" != auto ] && echo "$ways" | grep -qv " $want_way\$"; then
    echo "FAIL directions=$directions not followed: $what"; fail=1; continue
  fi
  rewritten=$(echo "$stats" | grep 'rewritten, note \[ring\]')
  if echo "$rewritten" | grep -Ev 'reducescatter|reduce_scatter' | grep -q ', direct$' ||
     { [ "$route" = direct ] && echo "$rewritten" | grep -E 'reducescatter|reduce_scatter' | grep -qv ', direct$'; } ||
     { [ "$route" = ring ] && echo "$rewritten" | grep -q ', direct$'; }; then
    echo "FAIL route=$route not followed (direct is for reduce-scatter sites): $what"; fail=1; continue
  fi
  [ "$chunks" = 0 ] || echo "$ways" | awk -v n="$chunks" '$1 != n { bad = 1 } END { exit bad }' ||
    { echo "FAIL chunks=$chunks not followed: $what"; fail=1; continue; }
  most=$(echo "$ways" | awk '$1 > m { m = $1 } END { print m + 0 }')
  tol=()
  scatters=$(echo "$stats" | sed -n 's/.*figure decomposed-reduce-scatters: \([0-9]*\).*/\1/p')
  if [ "${scatters:-0}" = 0 ] && [ $((shard / most * batch % 256)) = 0 ]; then
    tol=(--rtol 0 --atol 0)
  fi
  out=$("$SP_OPT" check "$tmp/b$i.json" "$tmp/a$i.json" "${tol[@]}" 2>&1) || { echo "FAIL check ${tol[*]}: $what"; echo "$out" | tail -2; fail=1; continue; }
  echo "ok${tol:+ bitwise}: $what: $(echo "$out" | tail -1)"
done
exit $fail
