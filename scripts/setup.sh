#!/usr/bin/env bash
# Newcomer's first command: install dependencies (Debian 12), build, and run the main job on
# shipped testdata: rewrite a sequence-parallel job, then prove the rewrite by replay.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The flags scripts/test.sh builds with: the second command reuses this build.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPOPT_WERROR=ON
cmake --build build -j"$(nproc)"
job=testdata/jobs/gen_mlp_tp4_sp.json
[ -f "$job" ] || job=testdata/jobs/hand_tp2_legacy.json
mkdir -p out
echo "== sp-opt rewrite $job out/rewritten.json --stats"
build/sp-opt rewrite "$job" out/rewritten.json --stats
echo "== sp-opt diff $job out/rewritten.json --summary (exit 1 = they differ, as expected; without --summary: every op)"
build/sp-opt diff "$job" out/rewritten.json --summary || [ $? -eq 1 ]
echo "== sp-opt check $job out/rewritten.json"
build/sp-opt check "$job" out/rewritten.json
