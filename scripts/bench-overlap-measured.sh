#!/usr/bin/env bash
# Measured vs predicted gain of the default chain over fuse-only, scheduled for this machine.
#
# For each job size and emulated link (replay --link BW_GBPS,LATENCY_US: every collective takes at
# least latency + ring bytes / BW of wall time), two rewrites of `gen gpt ... --tp 2
# --sequence-parallel`:
#   fuse  = --passes=fuse-allreduce-split (every collective on the compute stream)
#   chain = the default chain with overlap-collectives{preset=host,link=LINK}: scheduled against
#           the host model (this machine's calibrated rates) with that link's collectives
# then
#   measured  = replay --link LINK, the slowest rank's step, the best of RUNS runs (fuse and chain
#               alternate, so both see the same machine; the best run is the least disturbed one)
#   predicted = analyze --preset host --link LINK, the simulated step
# and prints, per row, the gain (fuse - chain) / fuse of each and their ratio (1 = the model's
# gain was measured; the target is 0.7-1.3), with the model's comm share of the fuse job's step;
# and `sp-opt check` of fuse against chain per job (bitwise on this backend). Replaces
# bench-overlap-replay.sh, which replayed one job under the h100-nvlink schedule.
#
# A row's schedule and prediction use one calibration (SPOPT_HOST_CALIBRATION, lib/runtime/
# calibrate.h), made just before its replays: the best of CAL_RUNS `analyze --calibrate
# --calibrate-ranks 2` rounds, per figure (the highest rates, the shortest wake-up; as the replays
# are the best of RUNS: the least loaded moment of each). The load (1-minute average) is printed
# beside each row: on a busy 2-core machine every figure moves. Not part of ctest.
#
# Usage: scripts/bench-overlap-measured.sh [SP_OPT] [RUNS] [LINKS] [SIZES]
#   defaults: build/sp-opt 5 "0.02,100 0.05,100" "s m l"; CAL_RUNS=3; SIZES from the names below.
#   `--before OLD_SP_OPT` as the first two arguments adds a row per job with OLD's default chain
#   (its own schedule) replayed beside the new one.
set -euo pipefail
BEFORE=""
if [[ ${1:-} == --before ]]; then BEFORE=$(realpath "$2"); shift 2; fi
SP_OPT=$(realpath "${1:-build/sp-opt}")
RUNS=${2:-5}
LINKS=${3:-"0.02,100 0.05,100"}
SIZES=${4:-"s m l"}
CAL_RUNS=${CAL_RUNS:-3}
WORK=$(mktemp -d /tmp/bench-overlap-measured.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

declare -A GEN=(
  [s]="--layers 2 --hidden 256 --heads 4 --seq 256 --batch 2"
  [m]="--layers 2 --hidden 512 --heads 8 --seq 256 --batch 2"
  [l]="--layers 4 --hidden 512 --heads 8 --seq 512 --batch 2"
)

echo "$(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
calibrate() {  # writes $WORK/cal.json: the best of CAL_RUNS rounds, per figure
  for _ in $(seq "$CAL_RUNS"); do "$SP_OPT" analyze --calibrate --calibrate-ranks 2; done > "$WORK/cal.all"
  python3 - "$WORK/cal.all" > "$WORK/cal.json" <<'PY'
import json, sys
rounds = [json.loads(line) for line in open(sys.argv[1])]
best = dict(rounds[0])
best["sgemm_mflops_by_n"] = {n: max(r["sgemm_mflops_by_n"][n] for r in rounds) for n in rounds[0]["sgemm_mflops_by_n"]}
for k in ("dgemm_flops", "copy_bw"):
    best[k] = max(r[k] for r in rounds)
best["wake_s"] = min(r["wake_s"] for r in rounds)
print(json.dumps(best))
PY
}
export SPOPT_HOST_CALIBRATION="$WORK/cal.json"

step_ms() {  # BINARY JOB LINK: the slowest rank's "rank R  T ms" line of replay's time table
  "$1" replay "$2" --link "$3" 2>&1 | sed -nE 's/^  rank [0-9]+ +([0-9.]+) ms.*/\1/p' | sort -g | tail -1
}
predict() {  # JOB LINK: "step_s comm_s" of the slowest simulated rank
  "$SP_OPT" analyze "$1" --preset host --link "$2" --format json |
    python3 -c 'import json,sys; s=json.load(sys.stdin)["step"]; r=max(s["ranks"], key=lambda r: r["end_s"]); print(s["step_s"], r["comm_s"])'
}

rows="$WORK/rows"
: > "$rows"
for size in $SIZES; do
  gen="gpt --tp 2 ${GEN[$size]} --sequence-parallel"
  "$SP_OPT" gen $gen -o "$WORK/in.json" > /dev/null
  "$SP_OPT" rewrite "$WORK/in.json" "$WORK/fuse.json" --passes=fuse-allreduce-split
  for link in $LINKS; do
    calibrate  # per row, just before its replays: the machine's load moves
    "$SP_OPT" rewrite "$WORK/in.json" "$WORK/chain.json" \
      "--passes=fuse-allreduce-split,regather-activations,overlap-collectives{preset=host,link=$link}"
    if [[ -n $BEFORE ]]; then "$BEFORE" rewrite "$WORK/in.json" "$WORK/old.json"; fi
    read -r pf cf < <(predict "$WORK/fuse.json" "$link")
    read -r pc _ < <(predict "$WORK/chain.json" "$link")
    mf=() mc=() mo=()
    for _ in $(seq "$RUNS"); do
      mf+=("$(step_ms "$SP_OPT" "$WORK/fuse.json" "$link")")
      mc+=("$(step_ms "$SP_OPT" "$WORK/chain.json" "$link")")
      if [[ -n $BEFORE ]]; then mo+=("$(step_ms "$SP_OPT" "$WORK/old.json" "$link")"); fi
    done
    echo "$size|$gen|$link|$pf|$cf|$pc|${mf[*]}|${mc[*]}|${mo[*]:-}|$(cut -d' ' -f1 /proc/loadavg)" >> "$rows"
    echo "$size $link calibration: $(cat "$WORK/cal.json")"
  done
  # The rewrite must not change a bit of the results (the local backend is deterministic).
  echo "$size check fuse vs chain: $("$SP_OPT" check "$WORK/fuse.json" "$WORK/chain.json" 2>&1 | tail -1)"
done

python3 - "$rows" "$RUNS" <<'PY'
import sys
rows, runs = sys.argv[1], sys.argv[2]
print(f"\nbest of {runs} replays per job (slowest rank, ms); predicted = analyze --preset host --link (same calibration)\n")
print("| job | link | model comm share (fuse) | fuse measured | chain measured | measured gain | fuse predicted | chain predicted | predicted gain | measured / predicted | load |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
olds = []
for line in open(rows):
    size, gen, link, pf, cf, pc, mf, mc, mo, load = line.rstrip("\n").split("|")
    pf, cf, pc = float(pf) * 1e3, float(cf) * 1e3, float(pc) * 1e3
    bf, bc = min(map(float, mf.split())), min(map(float, mc.split()))
    gm, gp = (bf - bc) / bf, (pf - pc) / pf
    ratio = f"{gm / gp:.2f}" if abs(gp) > 1e-9 else "-"
    job = gen.replace("gpt --tp 2 ", "").replace(" --sequence-parallel", "")
    print(f"| {size}: {job} | {link} | {cf / pf:.0%} | {bf:.1f} | {bc:.1f} | {gm:+.1%} | {pf:.1f} | {pc:.1f} | {gp:+.1%} | {ratio} | {load} |")
    if mo:
        olds.append((size, link, bf, min(map(float, mo.split())), bc))
if olds:
    print("\nthe old binary's default chain (scheduled for h100-nvlink) on the same runs:\n")
    print("| job | link | fuse | old chain | new chain (preset=host) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for size, link, bf, bo, bc in olds:
        print(f"| {size} | {link} | {bf:.1f} | {bo:.1f} ({(bf - bo) / bf:+.1%}) | {bc:.1f} ({(bf - bc) / bf:+.1%}) |")
PY
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
