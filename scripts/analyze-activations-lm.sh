#!/usr/bin/env bash
# Activation bytes of the language models (`gen gpt --vocab V`, `gen llama`) per group, as
# `sp-opt analyze` counts them (bf16, rank 0), next to the formulas they follow. Per layer:
#   gpt    Korthikanti et al. (2022), Table 2, as scripts/analyze-activations.sh holds it:
#          sbh(34 + 5as/h); TP sbh(10 + 24/t + 5as/(ht)); TP+SP sbh(4 + 30/t + 5as/(ht))
#   llama  no dropout, RMSNorm, SwiGLU (gate, up and their product kept: 6sbf), rotated q and k:
#          16sbh + 6sbf + 2as^2b; TP 8sbh + (8sbh + 6sbf)/t + 2as^2b/t;
#          TP+SP 4sbh + (12sbh + 6sbf)/t + 2as^2b/t (the gathered column inputs whole, as gpt's)
# plus float32 norm statistics (4 bytes per row per norm). Outside the layers (their Section 4.3):
# the embedding's output, the final norm (and the head's gathered input under SP), the head's
# softmax shard; llama's causal mask (a bool [b, a/t, s, s], shared by all layers).
# usage: scripts/analyze-activations-lm.sh [SP_OPT]   Env: S=256 B=2 H=512 A=8 V=1024 TPS="1 2 4"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp_opt=${1:-$root/build/sp-opt}
S=${S:-256} B=${B:-2} H=${H:-512} A=${A:-8} V=${V:-1024}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "gen MODEL --vocab $V --dtype bfloat16 --seq $S --batch $B --hidden $H --heads $A --layers 2 (f = 4h); rank 0"
echo
echo "| model | t | sp | group | analyze bytes | formula | formula bytes | ratio |"
echo "|---|---:|---|---|---:|---|---:|---:|"
for model in gpt llama; do
  for t in ${TPS:-1 2 4}; do
    for sp in "" --sequence-parallel; do
      [ "$t" = 1 ] && [ -n "$sp" ] && continue
      # shellcheck disable=SC2086
      "$sp_opt" gen $model --vocab "$V" --dtype bfloat16 --seq "$S" --batch "$B" --hidden "$H" --heads "$A" --layers 2 \
        --tp "$t" $sp -o "$dir/j.json" > /dev/null
      "$sp_opt" analyze "$dir/j.json" --format json --no-simulate -o "$dir/a.json"
      python3 - "$dir/a.json" "$model" "$t" "${sp:+yes}" "$S" "$B" "$H" "$A" "$V" <<'PY'
import json, sys
path, model, t, sp, s, b, h, a, v = sys.argv[1:]
t, s, b, h, a, v = int(t), int(s), int(b), int(h), int(a), int(v)
sp = sp == "yes"
f = 4 * h
groups = {l["layer"]: l["bytes"] for l in json.load(open(path))["ranks"][0]["activations"]["layers"]}
rows = sb = s * b
if sp: rows //= t
if model == "gpt":
    name, want = ("sbh(4 + 30/t + 5as/(ht)) + 16sb/t", s*b*h*(4 + 30/t + 5*a*s/(h*t)) + 16*rows) if sp else \
                 ("sbh(10 + 24/t + 5as/(ht)) + 16sb", s*b*h*(10 + 24/t + 5*a*s/(h*t)) + 16*rows)
else:
    name, want = ("4sbh + (12sbh + 6sbf)/t + 2as^2b/t + 8sb/t", 4*s*b*h + (12*s*b*h + 6*s*b*f)/t + 2*a*s*s*b/t + 8*rows) if sp else \
                 ("8sbh + (8sbh + 6sbf)/t + 2as^2b/t + 8sb", 8*s*b*h + (8*s*b*h + 6*s*b*f)/t + 2*a*s*s*b/t + 8*rows)
    if t == 1: name = "16sbh + 6sbf + 2as^2b + 8sb"
if model == "gpt" and t == 1: name = "sbh(34 + 5as/h) + 16sb"
stats = (8 if model == "gpt" else 4) * rows  # the final norm's float32 statistics
outside = [("layer_1", name, want),
           ("embedding", "2sbh/t" if sp else "2sbh", 2*s*b*h/(t if sp else 1)),
           # The head reads the final norm's output (TP: through c_identity, counted in lm_head).
           ("final_norm", "2sbh + stats" if sp or t == 1 else "stats", (2*s*b*h if sp or t == 1 else 0) + stats),
           ("lm_head", "2sbv/t" if sp or t == 1 else "2sbh + 2sbv/t", 2*s*b*v/t + (0 if sp or t == 1 else 2*s*b*h))]
if model == "llama": outside.append(("causal_mask", "abs^2/t (bool)", a*b*s*s/t))
for group, fname, fbytes in outside:
    got = groups.get(group, 0)
    print(f"| {model} | {t} | {'yes' if sp else 'no'} | {group} | {got:,} | {fname} | {fbytes:,.0f} | {got / fbytes:.4f} |")
PY
    done
  done
done
