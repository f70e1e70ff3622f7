#!/usr/bin/env bash
# Regenerates the shipped generated jobs (testdata/jobs/gen_*.json) with `sp-opt gen`.
# usage: scripts/regen-testdata.sh [SP_OPT [OUT_DIR]]   (defaults: build/sp-opt, testdata/jobs)
# The golden case gen-testdata-current regenerates them into a temp dir and compares bytes, so a
# change to the generator that alters them fails until this script is re-run and the diff read.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
out=${2:-$root/testdata/jobs}
gen() {  # FILE ARGS...
  local file=$1
  shift
  "$sp_opt" gen "$@" -o "$out/$file"
}
gen gen_mlp_tp2.json            mlp --tp 2 --layers 2
gen gen_mlp_tp2_sp.json         mlp --tp 2 --layers 2 --sequence-parallel
gen gen_mlp_tp4_sp.json         mlp --tp 4 --layers 2 --sequence-parallel
gen gen_mlp_tp4_sp_current.json mlp --tp 4 --layers 2 --sequence-parallel --dialect current
gen gen_mlp_tp2_dp2_sp.json     mlp --tp 2 --dp 2 --layers 1 --sequence-parallel
gen gen_gpt_tp2_sp.json         gpt --tp 2 --layers 1 --sequence-parallel
gen gen_gpt_tp2_current.json    gpt --tp 2 --layers 1 --dialect current
