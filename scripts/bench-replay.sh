#!/bin/bash
# Replay throughput: achieved GEMM GFLOP/s of `sp-opt replay` on a generated transformer job,
# against the sgemm rate of the same OpenBLAS in the same binary (sp-opt replay --blas-probe),
# and the fraction of op time spent outside GEMMs (from --trace). Prints a markdown table.
# One row per rank count (RANKS, default "1 2 4": the same model at --tp 1, 2, 4, so the same
# GEMM FLOPs split over more ranks) and thread budget: "off" is OpenBLAS at full width in every rank
# thread (SPOPT_CPU_BUDGET=off, the behaviour before the budget), "on" the budget of
# runtime/cpu_budget.h (BLAS threads = cores / ranks, a core gate for kernels).
# Usage: scripts/bench-replay.sh [--before OLD_BINARY] [SP_OPT]   (env: RANKS LAYERS BATCH SEQ HIDDEN
# HEADS REPS BUDGETS="off on"; GEN=another sp-opt binary that has `gen`, when SP_OPT lacks it)
# --before OLD_BINARY: each row is run with both binaries, their runs interleaved (so machine load
# hits both alike), and the table gains "before" columns: one run prints before -> after.
# Uses `sp-opt gen gpt` when the binary has it (training step: forward, backward, sgd), else the
# forward-only MLP job of scripts/testgen/tp_mlp_job.py. Not part of ctest.
set -euo pipefail
BEFORE=""
if [ "${1:-}" = --before ]; then
  BEFORE=$2
  shift 2
fi
SP_OPT=${1:-build/sp-opt}
SRC=$(cd "$(dirname "$0")/.." && pwd)
GEN=${GEN:-$SP_OPT}
BUDGETS=${BUDGETS:-off on} RANKS=${RANKS:-1 2 4} LAYERS=${LAYERS:-4} BATCH=${BATCH:-4} SEQ=${SEQ:-128} HIDDEN=${HIDDEN:-512} HEADS=${HEADS:-8} REPS=${REPS:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$SP_OPT" replay --blas-probe > "$tmp/probe.txt"
core=$(awk '/^blas_core/ {print $2}' "$tmp/probe.txt")
sgemm=$(awk '/^sgemm_gflops/ {if ($3 > m) m = $3} END {print m}' "$tmp/probe.txt")

have_gen=0
"$GEN" --help | grep -qE "^  gen +" && have_gen=1
rows=""
for TP in $RANKS; do
  if [ $have_gen = 1 ]; then
    model="gen gpt --tp $TP --layers $LAYERS --batch $BATCH --seq $SEQ --hidden $HIDDEN --heads $HEADS --dropout 0"
    "$GEN" gen gpt --tp "$TP" --layers "$LAYERS" --batch "$BATCH" --seq "$SEQ" --hidden "$HIDDEN" --heads "$HEADS" \
      --dropout 0 -o "$tmp/job.json" > /dev/null
  else
    model="tp_mlp_job.py --tp $TP --layers $LAYERS --tokens $((BATCH * SEQ)) --hidden $HIDDEN (forward only; no sp-opt gen)"
    python3 "$SRC/scripts/testgen/tp_mlp_job.py" --tp "$TP" --layers "$LAYERS" --tokens $((BATCH * SEQ)) --hidden "$HIDDEN" -o "$tmp/job.json"
  fi
  for budget in $BUDGETS; do
    # best executor seconds (slowest rank), its command wall time and trace, per binary
    declare -A best=() best_wall=()
    for rep in $(seq "$REPS"); do
      for which in after ${BEFORE:+before}; do
        bin=$SP_OPT
        [ $which = before ] && bin=$BEFORE
        start=$(date +%s.%N)
        SPOPT_CPU_BUDGET=$budget "$bin" replay "$tmp/job.json" --trace "$tmp/trace.json" > "$tmp/out.txt"
        wall=$(echo "$(date +%s.%N) - $start" | bc -l)
        # The executor's time: the slowest rank (ranks run concurrently), without loading the job and
        # reserving its memory (command s counts those); program inputs are generated inside it.
        run=$(awk '$1 == "rank" && $4 == "ms" {if ($3 > m) m = $3} END {print m / 1000}' "$tmp/out.txt")
        if [ -z "${best[$which]:-}" ] || [ "$(echo "$run < ${best[$which]}" | bc -l)" = 1 ]; then
          best[$which]=$run
          best_wall[$which]=$wall
          cp "$tmp/trace.json" "$tmp/best-$which.json"
        fi
      done
    done
    rows+=$(python3 - "$tmp/job.json" "$tmp/best-after.json" "${best[after]}" "$sgemm" "${best_wall[after]}" "$budget" \
      "${best[before]:-}" "${best_wall[before]:-}" <<'PY'
import json, sys
job, trace = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
wall, sgemm, cmd_wall, budget = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
before, before_cmd = (float(sys.argv[7]), float(sys.argv[8])) if sys.argv[7] else (None, None)
def numel(s):
    n = 1
    for d in s: n *= d
    return n
flops = 0
for p in job['programs']:
    shapes = {v['name']: v['shape'] for b in p['blocks'] for v in b['vars']}
    for b in p['blocks']:
        for op in b['ops']:
            if op['type'] not in ('matmul_v2', 'matmul_v2_grad'): continue
            x, y = shapes[op['inputs']['X'][0]], shapes[op['inputs']['Y'][0]]
            a = op.get('attrs', {})
            k = x[-2] if a.get('trans_x') else x[-1]
            m = numel(x) // k                      # rows of X over its batch dims
            n = y[-2] if a.get('trans_y') else y[-1]
            if len(y) > 2: n *= numel(y[:-2]) // max(1, numel(x[:-2]))  # batched Y: same batch as X
            gemms = 1 if op['type'] == 'matmul_v2' else sum(1 for s in ('X@GRAD', 'Y@GRAD') if op['outputs'].get(s))
            flops += 2 * m * n * k * gemms
ev = [e for e in trace['traceEvents'] if e['ph'] == 'X']
total = sum(e['dur'] for e in ev)
gemm = sum(e['dur'] for e in ev if e['name'].startswith('matmul_v2'))
ranks = len(job['programs'])
ops = sum(len(b['ops']) for p in job['programs'] for b in p['blocks'])
rate = flops / 1e9 / wall
cells = [str(ranks), budget, str(ops), f"{flops/1e9:.2f}"]
if before is not None:
    brate = flops / 1e9 / before
    cells += [f"{before:.3f} → {wall:.3f}", f"{before_cmd:.3f} → {cmd_wall:.3f}", f"{brate:.1f} → {rate:.1f}",
              f"{brate/sgemm*100:.0f}% → {rate/sgemm*100:.0f}%"]
else:
    cells += [f"{wall:.3f}", f"{cmd_wall:.3f}", f"{rate:.1f}", f"{rate/sgemm*100:.0f}%"]
cells.append(f"{(1-gemm/total)*100 if total else 0:.0f}%")
print("| " + " | ".join(cells) + " |")
PY
)$'\n'
    unset best best_wall
  done
done
echo "model: $model (rows: --tp = ranks)"
echo "OpenBLAS core: $core (openblas_get_corename); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; cores: $(nproc); sgemm probe $sgemm GFLOP/s"
echo
arrow=""
[ -n "$BEFORE" ] && arrow=" (before → after)"
echo "load before the runs: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$BEFORE" ] && echo "before: $BEFORE; after: $SP_OPT (runs interleaved, best of $REPS each)"
echo
echo "| ranks | thread budget | ops | GEMM GFLOP | executor s (slowest rank)$arrow | command s$arrow | achieved GFLOP/s$arrow | of probe$arrow | op time outside GEMMs (after) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf "%s" "$rows"
