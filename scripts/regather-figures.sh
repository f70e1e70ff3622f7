#!/usr/bin/env bash
# The "must show" figures of regather-activations (issue 14), from `sp-opt analyze`:
#  1. per-layer activation bytes of `gen gpt --dtype bfloat16 --tp t --sequence-parallel` after
#     fuse-allreduce-split (before) and after fuse-allreduce-split,regather-activations (after),
#     beside Korthikanti's tensor+sequence-parallel sbh(34/t + 5as/(ht)); peak memory per rank;
#  2. the cost: backward all-gathers per layer before/after, their wire bytes, the simulated step
#     time under the preset (h100-nvlink);
#  3. `check` before vs after (local backend; mpi too when mpirun and the backend are present) on
#     the same jobs at gen's default size (replay of the big ones is slow on 2 cores).
# usage: scripts/regather-figures.sh [SP_OPT]   Env: S=256 B=2 H=512 A=8 TPS="2 4 8" PRESET=h100-nvlink
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp=${1:-$root/build/sp-opt}
S=${S:-256} B=${B:-2} H=${H:-512} A=${A:-8} PRESET=${PRESET:-h100-nvlink}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gen() { "$sp" gen gpt --dtype bfloat16 --layers 2 --sequence-parallel "$@" > /dev/null; }
for t in ${TPS:-2 4 8}; do
  gen --seq "$S" --batch "$B" --hidden "$H" --heads "$A" --tp "$t" -o "$dir/sp$t.json"
  "$sp" rewrite "$dir/sp$t.json" "$dir/before$t.json" --passes fuse-allreduce-split
  "$sp" rewrite "$dir/sp$t.json" "$dir/after$t.json" --passes fuse-allreduce-split,regather-activations
  "$sp" analyze "$dir/before$t.json" --preset "$PRESET" --format json -o "$dir/before$t.a.json"
  "$sp" analyze "$dir/after$t.json" --preset "$PRESET" --format json -o "$dir/after$t.a.json"
done
python3 - "$dir" "$S" "$B" "$H" "$A" "$PRESET" ${TPS:-2 4 8} <<'PY'
import json, sys
d, s, b, h, a, preset = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
tps = [int(x) for x in sys.argv[7:]]
def load(kind, t): return json.load(open(f"{d}/{kind}{t}.a.json"))
def layer(rep, name="layer_1"): return next(l for l in rep["ranks"][0]["activations"]["layers"] if l["layer"] == name)
def peak(rep): return max(r["memory"]["peak_bytes"] for r in rep["ranks"])
def gathers(rep, phase):
    cs = [c for c in rep["ranks"][0]["comm"]["collectives"] if c["kind"] == "all-gather" and c["phase"] == phase and c["layer"] == "layer_1"]
    return len(cs), sum(c["wire_bytes"] for c in cs)
print(f"gen gpt --dtype bfloat16 --seq {s} --batch {b} --hidden {h} --heads {a} --layers 2 --sequence-parallel; layer_1 of rank 0; before = fuse-allreduce-split, after = fuse-allreduce-split,regather-activations")
print()
print("| t | before bytes/layer | after bytes/layer | sbh(34/t + 5as/(ht)) | after / formula | peak/rank before | peak/rank after |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for t in tps:
    bf, af = load("before", t), load("after", t)
    want = s * b * h * (34 / t + 5 * a * s / (h * t))
    print(f"| {t} | {layer(bf)['bytes']:,} | {layer(af)['bytes']:,} | {want:,.0f} | {layer(af)['bytes'] / want:.4f} | {peak(bf):,} | {peak(af):,} |")
print()
print(f"| t | backward all-gathers/layer before | after | extra wire bytes/layer | step before ({preset}) | step after | change |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for t in tps:
    bf, af = load("before", t), load("after", t)
    (nb, wb), (na, wa) = gathers(bf, "backward"), gathers(af, "backward")
    sb, sa = bf["summary"]["step_s"], af["summary"]["step_s"]
    print(f"| {t} | {nb} | {na} | {wa - wb:,} | {sb * 1e6:.1f} us | {sa * 1e6:.1f} us | {100 * (sa / sb - 1):+.1f}% |")
PY
echo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for t in ${TPS:-2 4 8}; do
  for model in gpt mlp; do
    extra=$([ "$model" = gpt ] && echo "--heads 8 --hidden 32" || echo "")
    "$sp" gen "$model" --tp "$t" $extra --sequence-parallel -o "$dir/c.json" > /dev/null
    "$sp" rewrite "$dir/c.json" "$dir/cb.json" --passes fuse-allreduce-split
    "$sp" rewrite "$dir/cb.json" "$dir/ca.json" --passes regather-activations
    echo "$model tp $t local: $("$sp" check "$dir/cb.json" "$dir/ca.json")"
    if command -v mpirun > /dev/null; then
      echo "$model tp $t mpi:   $(timeout 300 mpirun -n "$t" --oversubscribe "$sp" check "$dir/cb.json" "$dir/ca.json" --backend mpi 2>&1 | tail -1)"
    fi
  done
done
