#!/usr/bin/env bash
# Per-layer activation bytes of `gen gpt --dtype bfloat16`, as `sp-opt analyze` counts them (vars
# produced in forward and read by buffer in backward), next to Korthikanti et al. (2022), Table 2:
#   no parallelism      sbh(34 + 5as/h)
#   tensor parallel     sbh(10 + 24/t + 5as/(ht))
#   tensor + sequence   sbh(34/t + 5as/(ht))   (column inputs kept sharded, re-gathered in backward)
# The generated sequence-parallel jobs keep the gathered column inputs whole (2sbh each, not /t),
# so they are also held against sbh(4 + 30/t + 5as/(ht)). Prints a markdown table.
# usage: scripts/analyze-activations.sh [SP_OPT]   Env: S=256 B=2 H=512 A=8 TPS="1 2 4"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
S=${S:-256} B=${B:-2} H=${H:-512} A=${A:-8}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "gen gpt --dtype bfloat16 --seq $S --batch $B --hidden $H --heads $A --layers 2; bytes of layer_1 on rank 0"
echo
echo "| t | job | analyze bytes/layer | formula | formula bytes | analyze / formula |"
echo "|---:|---|---:|---|---:|---:|"
row() {  # t label job formula_name formula_expr(python, in s b h a t)
  local t=$1 label=$2 job=$3 name=$4 expr=$5
  "$sp_opt" analyze "$job" --format json --no-simulate -o "$dir/a.json"
  python3 - "$dir/a.json" "$t" "$label" "$name" "$expr" "$S" "$B" "$H" "$A" <<'PY'
import json, sys
path, t, label, name, expr, s, b, h, a = sys.argv[1:]
t, s, b, h, a = int(t), int(s), int(b), int(h), int(a)
rep = json.load(open(path))
layer = next(l for l in rep["ranks"][0]["activations"]["layers"] if l["layer"] == "layer_1")
want = eval(expr)
print(f"| {t} | {label} | {layer['bytes']:,} | {name} | {want:,.0f} | {layer['bytes'] / want:.4f} |")
PY
}
for t in ${TPS:-1 2 4}; do
  "$sp_opt" gen gpt --dtype bfloat16 --seq "$S" --batch "$B" --hidden "$H" --heads "$A" --layers 2 --tp "$t" -o "$dir/tp.json" >/dev/null
  if [ "$t" = 1 ]; then
    row 1 "no parallelism" "$dir/tp.json" "sbh(34 + 5as/h)" "s*b*h*(34 + 5*a*s/h)"
    continue
  fi
  row "$t" "tensor parallel" "$dir/tp.json" "sbh(10 + 24/t + 5as/(ht))" "s*b*h*(10 + 24/t + 5*a*s/(h*t))"
  "$sp_opt" gen gpt --dtype bfloat16 --seq "$S" --batch "$B" --hidden "$H" --heads "$A" --layers 2 --tp "$t" \
    --sequence-parallel -o "$dir/sp.json" >/dev/null
  "$sp_opt" rewrite "$dir/sp.json" "$dir/fused.json" >/dev/null
  for job in sp fused; do
    label="tp+sp, $( [ $job = sp ] && echo pre-fusion || echo fused )"
    row "$t" "$label" "$dir/$job.json" "sbh(34/t + 5as/(ht))" "s*b*h*(34/t + 5*a*s/(h*t))"
    row "$t" "$label" "$dir/$job.json" "sbh(4 + 30/t + 5as/(ht)), column inputs whole" "s*b*h*(4 + 30/t + 5*a*s/(h*t))"
  done
done
