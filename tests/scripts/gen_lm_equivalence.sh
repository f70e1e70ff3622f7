#!/usr/bin/env bash
# The language models of `gen` (gpt --vocab, llama) compute the serial model in every layout:
# for tp 1/2/4 with and without sequence parallelism, data parallelism 1 and 2, legacy and PIR,
# `check SERIAL DIST --serial` passes in float64 (rtol 1e-12) and float32 (check's defaults),
# and under --amp bf16 (legacy, current and PIR) to bfloat16's rtol 1e-2;
# every job validates, and the default rewrite chain (fuse, regather, overlap) replays bitwise
# like the job it rewrote.
# With SPOPT_SHORT_SWEEPS=1 (the sanitizer stage of scripts/test.sh), one sharded layout per model,
# precision and dialect (tp 2, sequence parallel, dp 2): a sanitizer looks for memory errors on
# each code path, and the full sweep of the first stage has already checked every layout's numbers.
# usage: gen_lm_equivalence.sh SP_OPT
set -euo pipefail
short=${SPOPT_SHORT_SWEEPS:-0}
sp_opt=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
size=(--layers 2 --batch 4 --seq 8 --hidden 16 --heads 4 --ffn 32 --vocab 32 --dropout 0 --optimizer adamw)
for model in gpt llama; do
  for dtype in float64 float32 amp; do
    tol=()
    prec=(--dtype "$dtype")
    dialects="legacy pir"
    [ "$dtype" = float64 ] && tol=(--rtol 1e-12 --atol 1e-14)
    if [ "$dtype" = amp ]; then
      tol=(--rtol 1e-2)
      prec=(--amp bf16)
      dialects="legacy current pir"
    fi
    "$sp_opt" gen "$model" --tp 1 "${size[@]}" "${prec[@]}" -o "$tmp/serial.json" > /dev/null
    for tp in 1 2 4; do
      for sp in "" --sequence-parallel; do
        for dp in 1 2; do
          for dialect in $dialects; do
            [ "$tp" = 1 ] && [ -n "$sp" ] && continue
            [ "$short" = 1 ] && { [ "$tp" != 2 ] || [ -z "$sp" ] || [ "$dp" != 2 ]; } && continue
            layout="--tp $tp --dp $dp $sp --dialect $dialect"
            # shellcheck disable=SC2086
            "$sp_opt" gen "$model" $layout "${size[@]}" "${prec[@]}" -o "$tmp/dist.json" > /dev/null
            printf '%-5s %-7s %-46s ' "$model" "$dtype" "$layout"
            if ! "$sp_opt" validate "$tmp/dist.json" > "$tmp/log" 2>&1 ||
               ! "$sp_opt" check "$tmp/serial.json" "$tmp/dist.json" --serial "${tol[@]}" > "$tmp/serial.txt" 2>&1 ||
               ! "$sp_opt" rewrite "$tmp/dist.json" "$tmp/rw.json" > "$tmp/log" 2>&1 ||
               ! "$sp_opt" validate "$tmp/rw.json" > "$tmp/log" 2>&1 ||
               ! "$sp_opt" check "$tmp/dist.json" "$tmp/rw.json" --rtol 0 --atol 0 > "$tmp/log" 2>&1; then
              echo "FAIL"
              cat "$tmp/serial.txt" "$tmp/log"
              fail=1
              continue
            fi
            sed -n 's/.*largest rel \([^ ]*\) abs \([^ ]*\).*/ok (serial: largest rel \1 abs \2; rewrite bitwise)/p' "$tmp/serial.txt"
          done
        done
      done
    done
  done
done
exit $fail
