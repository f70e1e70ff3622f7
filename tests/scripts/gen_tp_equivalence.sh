#!/usr/bin/env bash
# The generator's sharding is right: the same model generated with --tp 1 and with tensor,
# sequence and data parallelism (dropout 0) gives the same loss and the same updated parameters
# under replay, to float32 tolerance. Needs `sp-opt replay` (exit 77 where this build lacks it).
# usage: gen_tp_equivalence.sh SP_OPT SOURCE_DIR
set -euo pipefail
sp_opt=$1
src=$2
if ! "$sp_opt" --help | grep -E "^  replay " > /dev/null; then
  echo "skipped: this sp-opt has no replay subcommand yet"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compare="$src/tests/scripts/gen_compare_dumps.py"
fail=0
run() {  # NAME ARGS...: generate, validate, replay with --dump into $tmp/NAME
  local name=$1
  shift
  "$sp_opt" gen "$@" -o "$tmp/$name.json" > /dev/null
  "$sp_opt" validate "$tmp/$name.json" > /dev/null
  "$sp_opt" replay "$tmp/$name.json" --seed 11 --dump "$tmp/$name.dump" > "$tmp/$name.replay.txt"
}
for model in mlp gpt; do
  size=(--layers 2 --batch 4 --seq 8 --hidden 16 --heads 4 --ffn 32 --dropout 0)
  run "${model}_ref" "$model" --tp 1 "${size[@]}"
  for layout in "--tp 4" "--tp 4 --sequence-parallel" "--tp 4 --sequence-parallel --dialect current" \
                "--tp 2 --dp 2 --sequence-parallel" "--tp 1 --dp 2" "--tp 2 --dp 2 --dialect current"; do
    name="${model}_$(echo "$layout" | tr -d ' -')"
    # shellcheck disable=SC2086
    run "$name" "$model" $layout "${size[@]}"
    printf '%-4s %-46s ' "$model" "$layout"
    if ! python3 "$compare" "$tmp/${model}_ref.json" "$tmp/${model}_ref.dump" "$tmp/$name.json" "$tmp/$name.dump"; then
      fail=1
    fi
  done
done
exit $fail
