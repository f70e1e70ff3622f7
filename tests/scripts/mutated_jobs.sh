#!/bin/bash
# Mutated jobs through every command (tests/scripts/mutated_jobs.py says what is mutated and what
# each command must do): generated jobs of each model and dialect, and the shipped testdata jobs,
# each case one or two mutations. The cases are fixed by the seed (SPOPT_MUTATION_SEED, default
# 1), so a failure reproduces; another seed explores further. 80 cases (40 with
# SPOPT_SHORT_SWEEPS=1, the sanitizer stage).
set -u
SP_OPT=$1 SRC=$2
"$SP_OPT" --help | grep -qE "^  gen +" || { echo "no gen subcommand"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$SP_OPT" gen gpt --tp 2 --layers 1 --sequence-parallel -o "$tmp/gpt_sp.json" > /dev/null &&
  "$SP_OPT" gen mlp --tp 2 --layers 1 --sequence-parallel --dialect current -o "$tmp/mlp_current.json" > /dev/null &&
  "$SP_OPT" gen llama --tp 2 --layers 1 --sequence-parallel -o "$tmp/llama_sp.json" > /dev/null &&
  "$SP_OPT" gen gpt --tp 2 --dp 2 --layers 1 --vocab 32 -o "$tmp/gpt_dp2_vocab.json" > /dev/null || { echo "FAIL: gen"; exit 1; }
cases=80
[ "${SPOPT_SHORT_SWEEPS:-0}" = 1 ] && cases=40
python3 "$SRC/tests/scripts/mutated_jobs.py" "$SP_OPT" "$cases" "${SPOPT_MUTATION_SEED:-1}" "$tmp"/*.json "$SRC"/testdata/jobs/*.json
