#!/usr/bin/env bash
# The "must show" figures of decompose-collective-matmul (issue 25):
#  1. analyze (PRESET, default h100-nvlink), gen gpt --dtype bfloat16 --seq 2048 --batch 1 --tp 8
#     --sequence-parallel, GPT-3 (h 12288, 96 heads) and h 4096 (32 heads), 2 and 8 layers:
#     before = the chain without the pass (fuse, regather, overlap), after = fuse-allreduce-split,regather-activations,
#     decompose-collective-matmul,overlap-collectives: forward exposed comm (and its share of the
#     forward's comm before), total exposed comm as a share of the step, step time, peak memory;
#  2. a site the pass declines (h 1024, s 512, t 2) with its --explain lines (rank 0);
#  3. check, local and mpi (when mpirun is there), gen gpt and gen llama, tp 2/4/8, legacy and
#     PIR: the all-gather form alone with --rtol 0 --atol 0 (seq 512 x batch 4: every chunk whole
#     256-row blocks of replay's GEMM, runtime/kernels/blas.h), both forms with check's tolerance;
#  4. replay --link LINK (local) before -> after, median of REPS, beside analyze --preset host
#     with the same link (--bus-bw, --latency) for both.
# usage: scripts/collective-matmul-figures.sh [SP_OPT]   Env: PRESET LINK=0.05,100 REPS=3 SKIP_REPLAY=1 SKIP_MPI=1
#        ONLY_REPLAY=1 (section 4 alone) SKIP_ANALYZE=1 (no section 1) SKIP_CHECK=1 (no section 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp=${1:-$root/build/sp-opt}
PRESET=${PRESET:-h100-nvlink} LINK=${LINK:-0.05,100} REPS=${REPS:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
before=fuse-allreduce-split,regather-activations,overlap-collectives
after=fuse-allreduce-split,regather-activations,decompose-collective-matmul,overlap-collectives

if [ -z "${ONLY_REPLAY:-}" ]; then
if [ -z "${SKIP_ANALYZE:-}" ]; then
echo "## 1. analyze --preset $PRESET, gen gpt --dtype bfloat16 --seq 2048 --batch 1 --tp 8 --sequence-parallel"
echo "before: --passes=$before; after: --passes=$after"
echo
echo "(fwd comm: the forward's communication before the pass; the ring's sends and receives count twice in analyze's comm time)"
echo "| h | layers | fwd comm | fwd exposed before -> after (share of fwd comm) | exposed / step before -> after | step before -> after | peak before -> after |"
echo "|---:|---:|---:|---|---|---|---|"
for shape in "12288 96" "4096 32"; do
  set -- $shape
  for layers in 2 8; do
    j=$dir/gpt_$1_$layers
    "$sp" gen gpt --dtype bfloat16 --hidden "$1" --heads "$2" --seq 2048 --batch 1 --tp 8 --layers "$layers" --sequence-parallel -o "$j.json" > /dev/null
    "$sp" rewrite "$j.json" "$j.before.json" --passes="$before" 2> /dev/null
    "$sp" rewrite "$j.json" "$j.after.json" --passes="$after" 2> /dev/null
    "$sp" analyze "$j.before.json" --preset "$PRESET" --format json -o "$j.before.a.json"
    "$sp" analyze "$j.after.json" --preset "$PRESET" --format json -o "$j.after.a.json"
    python3 - "$j" "$1" "$layers" <<'PY'
import json, sys
j, h, layers = sys.argv[1:4]
def rep(k): return json.load(open(f"{j}.{k}.a.json"))
def fwd(r, key): return max(x["phases"]["forward"][key] for x in r["step"]["ranks"])
b, a = rep("before"), rep("after")
ms = lambda s: f"{s*1e3:.3f} ms"
us = lambda s: f"{s*1e6:.1f} us"
gib = lambda x: f"{x/2**30:.2f} GiB"
fc = fwd(b, "comm_s")
fe_b, fe_a = fwd(b, "exposed_comm_s"), fwd(a, "exposed_comm_s")
sb, sa = b["summary"], a["summary"]
print(f"| {h} | {layers} | {ms(fc)} | {us(fe_b)} ({100*fe_b/fc:.1f}%) -> {us(fe_a)} ({100*fe_a/fc:.1f}%) | "
      f"{100*sb['exposed_comm_s']/sb['step_s']:.2f}% -> {100*sa['exposed_comm_s']/sa['step_s']:.2f}% | "
      f"{ms(sb['step_s'])} -> {ms(sa['step_s'])} ({100*(sa['step_s']/sb['step_s']-1):+.1f}%) | "
      f"{gib(sb['peak_bytes_per_rank'])} -> {gib(sa['peak_bytes_per_rank'])} |")
PY
  done
done

fi
echo
echo "## 2. declined: gen gpt --dtype bfloat16 --hidden 1024 --heads 16 --seq 512 --batch 1 --tp 2 --layers 2 --sequence-parallel"
j=$dir/small
"$sp" gen gpt --dtype bfloat16 --hidden 1024 --heads 16 --seq 512 --batch 1 --tp 2 --layers 2 --sequence-parallel -o "$j.json" > /dev/null
# the pass's own block of --stats (up to the next pass's line), then its explain lines of rank 0
"$sp" rewrite "$j.json" "$j.after.json" --passes="$after" --explain --stats 2>&1 |
  awk '/^  decompose-collective-matmul/ { on = 1; print; next } /^  [a-z]/ { on = 0 } on && /^    / { print }
       /^decompose-collective-matmul: rank 0 / { print }' | sed -n 1,16p

if [ -z "${SKIP_CHECK:-}" ]; then
echo
echo "## 3. check (before: the default chain; after: + decompose-collective-matmul{mode=always})"
echo
echo "| model | dialect | tp | all-gather form, local --rtol 0 --atol 0 | all-gather form, local | both forms, local | both forms, mpi |"
echo "|---|---|---:|---|---|---|---|"
for model in gpt llama; do
  for dialect in legacy pir; do
    for tp in 2 4 8; do
      j=$dir/c_${model}_${dialect}_$tp
      "$sp" gen "$model" --dialect "$dialect" --tp "$tp" --layers 2 --hidden 64 --heads 8 --seq 512 --batch 4 --sequence-parallel -o "$j.json" > /dev/null
      "$sp" rewrite "$j.json" "$j.before.json" 2> /dev/null
      "$sp" rewrite "$j.json" "$j.ag.json" --passes="fuse-allreduce-split,regather-activations,decompose-collective-matmul{mode=always,phases=all,forms=all-gather,chunks=1},overlap-collectives" 2> /dev/null
      "$sp" rewrite "$j.json" "$j.after.json" --passes="fuse-allreduce-split,regather-activations,decompose-collective-matmul{mode=always,phases=all},overlap-collectives" 2> /dev/null
      ag=$("$sp" check "$j.before.json" "$j.ag.json" --rtol 0 --atol 0 2>&1 | tail -1) || true
      agt=$("$sp" check "$j.before.json" "$j.ag.json" 2>&1 | tail -1) || true
      both=$("$sp" check "$j.before.json" "$j.after.json" 2>&1 | tail -1) || true
      mpi="skipped"
      if [ -z "${SKIP_MPI:-}" ] && command -v mpirun > /dev/null; then
        mpi=$(timeout 300 mpirun -n "$tp" --oversubscribe "$sp" check "$j.before.json" "$j.after.json" --backend mpi 2>&1 | grep -E "^check" | tail -1) || mpi="failed"
      fi
      echo "| $model | $dialect | $tp | $ag | $agt | $both | $mpi |"
    done
  done
done
fi

fi
[ -n "${SKIP_REPLAY:-}" ] && exit 0
echo
echo "## 4. replay --link $LINK (local backend, median of $REPS) beside analyze --preset host --link $LINK"
j=$dir/replay
"$sp" gen gpt --tp 2 --layers 2 --hidden 512 --heads 8 --seq 256 --batch 2 --sequence-parallel -o "$j.json" > /dev/null
"$sp" rewrite "$j.json" "$j.before.json" --passes="$before" 2> /dev/null
"$sp" rewrite "$j.json" "$j.after.json" --passes="fuse-allreduce-split,regather-activations,decompose-collective-matmul{mode=always},overlap-collectives" 2> /dev/null
echo
echo "| job | replay step (median, slowest rank) | analyze --preset host --link $LINK (one calibration for both) |"
echo "|---|---:|---:|"
pred=$("$sp" analyze "$j.before.json" "$j.after.json" --preset host --link "$LINK" | sed -nE 's/^step time +([0-9.]+ [mu]?s) +([0-9.]+ [mu]?s).*/\1|\2/p' | head -1)
for k in before after; do
  times=()
  for _ in $(seq "$REPS"); do
    # the slowest rank's "rank R  T ms" line of replay's time table
    times+=("$("$sp" replay "$j.$k.json" --link "$LINK" 2>&1 | sed -nE 's/^  rank [0-9]+ +([0-9.]+) ms.*/\1/p' | sort -g | tail -1)")
  done
  med=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (REPS + 1) / 2 ))p")
  [ "$k" = before ] && p=${pred%%|*} || p=${pred##*|}
  echo "| $k | $med ms (runs: ${times[*]}) | $p |"
done
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "what the pass itself decides for this job under preset=host,link=$LINK (after above is mode=always):"
"$sp" rewrite "$j.json" "$dir/host.json" --passes="fuse-allreduce-split,regather-activations,decompose-collective-matmul{preset=host,link=$LINK},overlap-collectives" --stats --explain 2>&1 |
  awk '/^  decompose-collective-matmul/ { on = 1; print; next } /^  [a-z]/ { on = 0 } on && /^    / { print }
       /^decompose-collective-matmul: rank 0 .*no-gain/ && n++ < 2 { print }'
