#!/usr/bin/env bash
# One-shot check of the nccl backend on a GPU machine (about 8 minutes on one H200):
#   1. builds sp-opt and spopt-kernel-parity with SPOPT_NCCL=ON (CUDA architectures: $CUDA_ARCH, 90);
#   2. runs every CUDA kernel against its CPU kernel on random inputs (relative error table);
#   3. replays every testdata job whose world_size fits the GPUs present with --backend nccl, and
#      runs `sp-opt check JOB JOB --backend local --backend-after nccl` (local vs nccl outputs);
#   4. runs `check BEFORE AFTER --backend nccl` on the fused pairs and on the wrong-chunk rewrite
#      (which must fail with exit 1);
# and prints a short table last. Jobs needing more GPUs than present are listed as skipped.
# Usage: scripts/gpu-check.sh [BUILD_DIR]     (default: build-gpu under the source tree)
#        SKIP_BUILD=1 reuses BUILD_DIR as it is (a rerun after a first pass).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
arch=${CUDA_ARCH:-90}
jobs_dir=$root/testdata/jobs
out=$(mktemp -d)
rows=()
status=0
row() { rows+=("| $1 | $2 | $3 | $4 |"); }
note() { echo "== $*"; }

note "GPUs"
gpus=0
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader || true
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
else
  gpus=$(ls /dev/nvidia[0-9]* 2>/dev/null | wc -l)  # no nvidia-smi: count the device nodes
fi
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  visible=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
  [ "$visible" -lt "$gpus" ] && gpus=$visible
fi
echo "GPUs present: $gpus"

note "build ($build, CUDA architectures $arch)"
t0=$(date +%s)
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  echo "SKIP_BUILD=1: using $build as it is"
elif ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPOPT_NCCL=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
     -DBUILD_TESTING=OFF >"$out/cmake.log" 2>&1; then
  tail -30 "$out/cmake.log"; echo "gpu-check: cmake failed"; exit 2
fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  grep "nccl backend" "$out/cmake.log"
  if ! grep -q "nccl backend: CUDA" "$out/cmake.log"; then echo "gpu-check: the nccl backend was not configured"; exit 2; fi
  if ! make -C "$build" -j"$(nproc)" sp-opt spopt-kernel-parity >"$out/make.log" 2>&1; then
    grep -E "error|Error" "$out/make.log" | head -30; echo "gpu-check: build failed"; exit 2
  fi
fi
echo "built in $(( $(date +%s) - t0 )) s"
sp=$build/sp-opt
row "build" "-" "ok" "$(( $(date +%s) - t0 )) s"

note "kernel parity (device vs CPU kernels, random inputs)"
timeout 300 "$build/spopt-kernel-parity" | tee "$out/parity.txt"
prc=${PIPESTATUS[0]}
summary=$(grep "kernel parity:" "$out/parity.txt" || echo "no summary (rc $prc)")
if [ "$prc" = 0 ]; then row "kernel parity" "1" "ok" "$summary"
elif [ "$prc" = 77 ]; then row "kernel parity" "1" "skipped" "$(head -1 "$out/parity.txt")"; status=1
else row "kernel parity" "1" "FAIL (rc $prc)" "$summary"; status=1; fi

world_of() { grep -o '"world_size": *[0-9]*' "$1" | head -1 | grep -o '[0-9]*$'; }

skipped=()
for job in "$jobs_dir"/*.json; do
  name=$(basename "$job" .json)
  case "$name" in bad_*) continue ;; esac
  world=$(world_of "$job")
  if [ -z "$world" ] || [ "$world" -gt "$gpus" ]; then skipped+=("$name (world_size $world)"); continue; fi
  note "$name: world_size $world"
  if ! timeout 120 "$sp" replay "$job" >"$out/$name.local" 2>"$out/$name.local.err"; then
    skipped+=("$name (local replay refuses: $(head -c 120 "$out/$name.local.err"))"); continue
  fi
  timeout 180 "$sp" replay "$job" --backend nccl --trace "$out/$name.trace.json" >"$out/$name.nccl" 2>"$out/$name.nccl.err"
  rc=$?
  if [ "$rc" != 0 ]; then
    row "replay $name" "$world" "FAIL (rc $rc)" "$(head -c 160 "$out/$name.nccl.err")"; status=1; continue
  fi
  ms=$(grep -o '[0-9.]* ms' "$out/$name.nccl" | head -1)
  # Dropout masks (uint8/bool vars) must be bit-identical: same summary line, checksum included.
  if ! diff <(grep -E ' (uint8|bool) ' "$out/$name.local") <(grep -E ' (uint8|bool) ' "$out/$name.nccl") >"$out/$name.masks.diff"; then
    row "$name: masks local vs nccl" "$world" "FAIL" "uint8/bool vars differ (see $out/$name.masks.diff)"; status=1
  elif grep -qE ' (uint8|bool) ' "$out/$name.local"; then
    row "$name: masks local vs nccl" "$world" "ok (bitwise)" "$(grep -cE ' (uint8|bool) ' "$out/$name.local") uint8/bool vars"
  fi
  timeout 180 "$sp" check "$job" "$job" --backend local --backend-after nccl >"$out/$name.check" 2>&1
  rc=$?
  line=$(tail -1 "$out/$name.check")
  if [ "$rc" = 0 ]; then row "$name: local vs nccl" "$world" "ok" "nccl rank 0 $ms; ${line#check: ok: }"
  else row "$name: local vs nccl" "$world" "FAIL (rc $rc)" "$line"; status=1; fi
done

note "rewrite checks on the GPUs"
pair() {  # before after expected-rc label
  local world; world=$(world_of "$jobs_dir/$1.json")
  if [ -z "$world" ] || [ "$world" -gt "$gpus" ]; then skipped+=("check $4 (world_size $world)"); return; fi
  timeout 180 "$sp" check "$jobs_dir/$1.json" "$jobs_dir/$2.json" --backend nccl >"$out/$4.check" 2>&1
  local rc=$?
  local line; line=$(tail -1 "$out/$4.check")
  if [ "$rc" = "$3" ]; then row "check $4 (nccl)" "$world" "ok (rc $rc as expected)" "$line"
  else row "check $4 (nccl)" "$world" "FAIL (rc $rc, expected $3)" "$line"; status=1; fi
}
for fused in "$jobs_dir"/*.fused.json; do
  b=$(basename "$fused" .fused.json)
  [ -f "$jobs_dir/$b.json" ] && pair "$b" "$b.fused" 0 "$b fused"
done
pair hand_tp2_legacy hand_tp2_wrong_chunk 1 "wrong chunk"

note "mpirun: one process per GPU"
if command -v mpirun >/dev/null && [ "$gpus" -ge 2 ] && [ -f "$out/hand_tp2_legacy.nccl" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  timeout 180 mpirun -n 2 "$sp" replay "$jobs_dir/hand_tp2_legacy.json" --backend nccl >"$out/mpirun.out" 2>&1
  rc=$?
  if [ "$rc" != 0 ]; then row "mpirun -n 2 replay hand_tp2_legacy" "2" "FAIL (rc $rc)" "$(tail -1 "$out/mpirun.out")"; status=1
  elif diff <(grep checksum "$out/hand_tp2_legacy.nccl") <(grep checksum "$out/mpirun.out") >/dev/null; then
    row "mpirun -n 2 replay hand_tp2_legacy" "2" "ok" "same vars as the in-process nccl run, bitwise"
  else
    row "mpirun -n 2 replay hand_tp2_legacy" "2" "ok (values differ)" "not bitwise equal to the in-process run (NCCL may pick another algorithm)"
  fi
else
  skipped+=("mpirun -n 2 (needs mpirun, 2 GPUs and the hand_tp2_legacy nccl run)")
fi

echo
echo "Skipped (need more GPUs than the $gpus present, or not replayable):"
for s in "${skipped[@]}"; do echo "  - $s"; done
echo
echo "| step | ranks | result | detail |"
echo "| --- | --- | --- | --- |"
for r in "${rows[@]}"; do echo "$r"; done
echo
echo "logs: $out"
exit $status
