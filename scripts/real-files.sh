#!/usr/bin/env bash
# Every real Paddle file in ../shared/real (copies in testdata/paddle): import, validate, analyze,
# replay, and the default chain's rewrite checked against the original -- one markdown row per
# job, with its op count and each step's wall time. Not part of ctest (the ResNet job alone
# replays for tens of seconds); the closing notes quote its table.
# usage: scripts/real-files.sh [SP_OPT]   (default build/sp-opt; REAL=DIR overrides the files' folder)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
sp=$(realpath "${1:-$root/build/sp-opt}")
real=${REAL:-$root/../shared/real}
[ -d "$real" ] || real=$root/testdata/paddle
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# step NAME CMD...: runs CMD, prints "ok 1.2s" or "exit N" as one cell.
step() {
  local start end rc
  start=$(date +%s%N)
  "$@" > "$tmp/out" 2> "$tmp/err"; rc=$?
  end=$(date +%s%N)
  if [ $rc = 0 ]; then awk -v ns=$((end - start)) 'BEGIN { printf "ok %.1fs", ns / 1e9 }'; else printf 'exit %d: %s' $rc "$(grep -v '^note: ' "$tmp/err" | head -c 140 | tr '\n|' '  ')"; fi
}
ops() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sum(len(b['ops']) for p in j['programs'] for b in p['blocks']))" "$1" 2>/dev/null || echo "-"; }

echo "| job | ops | import | validate | analyze | replay | rewrite | check (rewrite vs original) |"
echo "| --- | ---: | --- | --- | --- | --- | --- | --- |"
# row NAME "IMPORT ARGS" [ANALYZE ARGS] [REPLAY ARGS (replay and check)]
row() {
  local name=$1 args=$2 extra=${3:-} run=${4:-} j=$tmp/job.json
  rm -f "$j" "$tmp/rw.json"
  local imp val ana rep rw chk
  # shellcheck disable=SC2086
  imp=$(cd "$real" && step "$sp" import $args -o "$j")
  val=$(step "$sp" validate "$j")
  # shellcheck disable=SC2086
  ana=$(step "$sp" analyze "$j" $extra)
  # shellcheck disable=SC2086
  rep=$(step "$sp" replay "$j" $run)
  rw=$(step "$sp" rewrite "$j" "$tmp/rw.json")
  # shellcheck disable=SC2086
  if [ -f "$tmp/rw.json" ]; then chk=$(step "$sp" check "$j" "$tmp/rw.json" $run); chk="$chk ($(grep -o 'ok: [0-9]* vars' "$tmp/out" || tail -1 "$tmp/out"))"; else chk="-"; fi
  echo "| $name | $(ops "$j") | $imp | $val | $ana | $rep | $rw | $chk |"
}
row "pdmodel/handwriting_mlp __model__" "pdmodel/handwriting_mlp__model__" --allow-forward-only
row "pdmodel/lite_mobilenet_v1 __model__" "pdmodel/lite_mobilenet_v1__model__" --allow-forward-only
row "pdmodel/lite_simple_model.pdmodel" "pdmodel/lite_simple_model.pdmodel" --allow-forward-only
# PP-OCRv5's image plane is dynamic too: 32 (a multiple of its stride 32) for batch, height and width.
row "pir-json/ppocrv5_mobile_det_inference.json (--dynamic-dim 32)" "pir-json/ppocrv5_mobile_det_inference.json" \
  "--allow-forward-only --dynamic-dim 32" "--dynamic-dim 32"
row "pir-text/fuse_allreduce_split_test_all_reduce.pirtxt (2 ranks)" "pir-text/fuse_allreduce_split_test_all_reduce.pirtxt pir-text/fuse_allreduce_split_test_all_reduce.pirtxt --ring 36=0,1" --allow-forward-only
row "pir-text/pir_parser_test_text.txt" "pir-text/pir_parser_test_text.txt" --allow-forward-only
row "paddle-text/resnet_dp (4 ranks + startup)" "paddle-text/resnet_dp_main_program.txt0 paddle-text/resnet_dp_main_program.txt1 paddle-text/resnet_dp_main_program.txt2 paddle-text/resnet_dp_main_program.txt3 --startup paddle-text/resnet_dp_start_program.txt0 paddle-text/resnet_dp_start_program.txt1 paddle-text/resnet_dp_start_program.txt2 paddle-text/resnet_dp_start_program.txt3"
row "paddle-text/gpt_dp_hybrid (2 data-parallel ranks)" "paddle-text/gpt_dp_hybrid_main_program.txt.1 paddle-text/gpt_dp_hybrid_main_program.txt.1 --ring 0=0,1"
