#!/usr/bin/env bash
# Paddle files through import / export (docs/paddle.md):
#  - every real ProgramDesc binary: import, validate, export -> the same bytes, replay;
#  - the real PP-OCRv5 PIR inference program: import, validate, analyze, replay (finite map);
#  - generated jobs (with dist attrs, fetch lists, rings): export pdmodel -> import -> the same JSON;
#  - the 4-rank ResNet job from its 8 text files: rings assembled, valid, and pdmodel -> import gives
#    the same job; the GPT rank imports and validate names the var its dump uses but never declares.
set -u
SPOPT=$(realpath "$1"); SRC=$2
cd "$SRC/testdata/paddle" || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
same_json() {  # same JSON value and key order
  python3 -c 'import json,sys; h=lambda p: p; sys.exit(0 if json.load(open(sys.argv[1]),object_pairs_hook=h)==json.load(open(sys.argv[2]),object_pairs_hook=h) else 1)' "$1" "$2"
}
for f in lite_simple_model.pdmodel handwriting_mlp__model__ lite_mobilenet_v1__model__; do
  "$SPOPT" import "$f" -o "$tmp/$f.json" && "$SPOPT" validate "$tmp/$f.json" >/dev/null \
    && "$SPOPT" export "$tmp/$f.json" --to pdmodel -o "$tmp/out_$f" >/dev/null \
    && cmp -s "$f" "$tmp/out_$f/rank_0.pdmodel" || { echo "FAIL $f: not exported back byte for byte"; fail=1; }
  # Inference programs replay too (batch -1 taken as 1), MobileNet's depthwise_conv2d included.
  "$SPOPT" replay "$tmp/$f.json" >/dev/null 2>"$tmp/replay.err" || { echo "FAIL $f: replay: $(head -c 300 "$tmp/replay.err")"; fail=1; }
done
# PP-OCRv5's detection program (PIR JSON, testdata/pir/real): its sigmoid / hardsigmoid / hardswish,
# nearest_interp and conv2d_transpose replay. Batch and image plane are dynamic (-1): at
# --dynamic-dim 32 the strided convolutions, upsamplings and concat size the plane
# (analysis/dynamic_dims.h), and the fetched probability map is [32,1,32,32] and finite.
ocr=$SRC/testdata/pir/real/ppocrv5_mobile_det_inference.json
"$SPOPT" import "$ocr" -o "$tmp/ocr.json" && "$SPOPT" validate "$tmp/ocr.json" >/dev/null \
  && "$SPOPT" analyze "$tmp/ocr.json" --allow-forward-only --dynamic-dim 32 >/dev/null 2>&1 \
  && "$SPOPT" replay "$tmp/ocr.json" --dynamic-dim 32 >"$tmp/ocr.out" 2>"$tmp/ocr.err" \
  && grep -E '^  v683 +float32 \[32,1,32,32\] +checksum [0-9a-f]+ +min [0-9.e+-]+ +max [0-9.e+-]+ +mean [0-9.e+-]+$' "$tmp/ocr.out" >/dev/null \
  || { echo "FAIL ppocrv5: import / validate / analyze / replay: $(grep -v "^note: " "$tmp/ocr.err" | head -c 300)"; fail=1; }
for spec in "mlp --tp 2 --layers 2" "gpt --tp 2 --dp 2 --sequence-parallel" "mlp --tp 4 --dialect current --dtype bfloat16"; do
  rm -rf "$tmp/gen"
  "$SPOPT" gen $spec -o "$tmp/gen.json" >/dev/null && "$SPOPT" export "$tmp/gen.json" --to pdmodel -o "$tmp/gen" >/dev/null || { echo "FAIL gen $spec: export"; fail=1; continue; }
  n=$(ls "$tmp/gen" | wc -l)
  files=(); for ((i = 0; i < n; i++)); do files+=("$tmp/gen/rank_$i.pdmodel"); done
  "$SPOPT" import "${files[@]}" -o "$tmp/gen2.json" && same_json "$tmp/gen.json" "$tmp/gen2.json" \
    || { echo "FAIL gen $spec: pdmodel -> import is not the same job"; fail=1; }
done
# A legacy job exported to PIR text is translated (ops/translate.h): Paddle 3's spelling, program
# inputs as builtin.parameter / pd_op.data, in-place updates as new values; it imports back, valid,
# and replays.
rm -rf "$tmp/pirtext"
"$SPOPT" export "$SRC/testdata/jobs/gen_mlp_tp2_sp.json" --to pir-text -o "$tmp/pirtext" >/dev/null \
  && grep -q '"pd_op.matmul"' "$tmp/pirtext/rank_0.pirtxt" \
  && "$SPOPT" import "$tmp"/pirtext/rank_{0,1}.pirtxt --ring 0=0,1 -o "$tmp/pirtext.json" \
  && "$SPOPT" validate "$tmp/pirtext.json" >/dev/null && "$SPOPT" replay "$tmp/pirtext.json" >/dev/null \
  || { echo "FAIL legacy job -> pir-text -> import -> replay"; fail=1; }
# PIR -> legacy (export --to pdmodel of a PIR job): gen --dialect pir comes back as the job gen
# writes in legacy ops, print for print; a legacy job through PIR JSON files (values renumbered,
# in-place writes as new values) and back to pdmodel replays bitwise as the PIR job does.
"$SPOPT" gen gpt --tp 2 --sequence-parallel --layers 1 -o "$tmp/gpt_legacy.json" >/dev/null
"$SPOPT" gen gpt --tp 2 --sequence-parallel --layers 1 --dialect pir -o "$tmp/gpt_pir.json" >/dev/null
rm -rf "$tmp/pir2legacy"
"$SPOPT" export "$tmp/gpt_pir.json" --to pdmodel -o "$tmp/pir2legacy" >/dev/null \
  && "$SPOPT" import "$tmp"/pir2legacy/rank_{0,1}.pdmodel -o "$tmp/pir2legacy.json" \
  && diff <("$SPOPT" print "$tmp/gpt_legacy.json") <("$SPOPT" print "$tmp/pir2legacy.json") >/dev/null \
  || { echo "FAIL gen --dialect pir -> pdmodel -> import is not the legacy gen job"; fail=1; }
rm -rf "$tmp/l2p" "$tmp/p2l"
"$SPOPT" export "$tmp/gpt_legacy.json" --to pir-json -o "$tmp/l2p" >/dev/null \
  && "$SPOPT" import "$tmp"/l2p/rank_{0,1}.json --ring 0=0,1 -o "$tmp/l2p.json" \
  && "$SPOPT" export "$tmp/l2p.json" --to pdmodel -o "$tmp/p2l" >/dev/null \
  && "$SPOPT" import "$tmp"/p2l/rank_{0,1}.pdmodel -o "$tmp/p2l.json" \
  && "$SPOPT" check "$tmp/l2p.json" "$tmp/p2l.json" | grep -q "^check: ok: [1-9][0-9]* vars on 2 ranks.*largest rel 0 abs 0" \
  || { echo "FAIL legacy -> pir-json -> import -> pdmodel -> import: not the same numbers"; fail=1; }
# Names, shardings, fetch lists and in-place updates survive PIR files: a tensor-parallel PIR job,
# rewritten by the whole chain, through PIR text and PIR JSON replays bitwise against itself and
# reads back as the same job (the same `print`, up to the order vars are declared in -- a PIR file
# declares values as ops define them -- and a JSON parameter op's flags); a legacy job through PIR text and back to pdmodel is the
# same job for `diff`.
"$SPOPT" gen gpt --dialect pir --tp 4 --sequence-parallel --layers 2 -o "$tmp/gpt_pir.json" >/dev/null \
  && "$SPOPT" rewrite "$tmp/gpt_pir.json" "$tmp/gpt_pir.rw.json" 2>/dev/null || { echo "FAIL gen pir + rewrite"; fail=1; }
for fmt in pir-text pir-json; do
  rm -rf "$tmp/rt_$fmt"
  "$SPOPT" export "$tmp/gpt_pir.rw.json" --to $fmt -o "$tmp/rt_$fmt" >/dev/null \
    && "$SPOPT" import "$tmp/rt_$fmt"/rank_{0,1,2,3}.* --ring 0=0,1,2,3 -o "$tmp/rt_$fmt.json" \
    && "$SPOPT" check "$tmp/gpt_pir.rw.json" "$tmp/rt_$fmt.json" --rtol 0 --atol 0 | grep -q "^check: ok: 84 vars on 4 ranks" \
    || { echo "FAIL tp4 pir job -> $fmt -> import: not bitwise the same 84 vars"; fail=1; }
  # PIR JSON's compact parameter op always carries Paddle's flags (is_parameter, trainable, ...).
  same_print() { "$SPOPT" print "$1" | sed -E '/= builtin.parameter\(/s/ \{.*\}$//' | sort; }
  diff <(same_print "$tmp/gpt_pir.rw.json") <(same_print "$tmp/rt_$fmt.json") >/dev/null \
    || { echo "FAIL tp4 pir job -> $fmt -> import: not the same job"; fail=1; }
done
rm -rf "$tmp/lt" "$tmp/ltm"
"$SPOPT" export "$tmp/gpt_legacy.json" --to pir-text -o "$tmp/lt" >/dev/null \
  && "$SPOPT" import "$tmp"/lt/rank_{0,1}.pirtxt --ring 0=0,1 -o "$tmp/lt.json" \
  && "$SPOPT" export "$tmp/lt.json" --to pdmodel -o "$tmp/ltm" >/dev/null \
  && "$SPOPT" import "$tmp"/ltm/rank_{0,1}.pdmodel -o "$tmp/ltm.json" \
  && "$SPOPT" diff "$tmp/gpt_legacy.json" "$tmp/ltm.json" > "$tmp/ltm.diff" \
  || { echo "FAIL legacy -> pir-text -> pdmodel: not the same job"; cat "$tmp/ltm.diff"; fail=1; }
"$SPOPT" import resnet_dp_main_program.txt{0..3} --startup resnet_dp_start_program.txt{0..3} -o "$tmp/resnet.json" \
  && "$SPOPT" validate "$tmp/resnet.json" >/dev/null || { echo "FAIL resnet: import/validate"; fail=1; }
"$SPOPT" export "$tmp/resnet.json" --to pdmodel -o "$tmp/rn" >/dev/null \
  && "$SPOPT" import "$tmp"/rn/rank_{0..3}.pdmodel -o "$tmp/resnet2.json" && same_json "$tmp/resnet.json" "$tmp/resnet2.json" \
  || { echo "FAIL resnet: pdmodel -> import is not the same job"; fail=1; }
for i in 0 1 2 3; do
  "$SPOPT" import resnet_dp_start_program.txt$i --ring 1=0 --ring 2=0 -o "$tmp/start$i.json" \
    && "$SPOPT" validate "$tmp/start$i.json" >/dev/null || { echo "FAIL start program $i"; fail=1; }
done
# The GPT training dump names its reader queue without declaring it (it lives in the executor's
# scope): import declares it as a RAW scope var and says so; the job validates, rewrites, and its
# pdmodel export leaves the queue out again, as Paddle wrote the program.
"$SPOPT" import gpt_dp_hybrid_main_program.txt.1 --ring 0=0 -o "$tmp/gpt.json" 2>"$tmp/err" || { echo "FAIL gpt: import"; fail=1; }
grep -q 'declared 1 var(s) .* (RAW): lod_tensor_blocking_queue_0' "$tmp/err" || { echo "FAIL gpt: import should name the queue it declared"; cat "$tmp/err"; fail=1; }
"$SPOPT" validate "$tmp/gpt.json" >/dev/null && "$SPOPT" rewrite "$tmp/gpt.json" "$tmp/gpt.rw.json" \
  || { echo "FAIL gpt: validate / rewrite"; fail=1; }
rm -rf "$tmp/gptpd"
"$SPOPT" export "$tmp/gpt.json" --to pdmodel -o "$tmp/gptpd" >/dev/null \
  && [ "$(grep -a -o lod_tensor_blocking_queue_0 "$tmp/gptpd/rank_0.pdmodel" | wc -l)" = 1 ] \
  && "$SPOPT" import "$tmp/gptpd/rank_0.pdmodel" --ring 0=0 -o "$tmp/gpt2.json" 2>/dev/null && same_json "$tmp/gpt.json" "$tmp/gpt2.json" \
  || { echo "FAIL gpt: pdmodel -> import is not the same job"; fail=1; }
[ $fail = 0 ] && echo "paddle round trips: ok"
exit $fail
