#!/bin/bash
# Replays the 4-rank collectives job and checks every dumped var against a plain-Python
# recomputation (input rule + collective semantics), and the trace's structure.
set -eu
SP_OPT=$1 SRC=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$SP_OPT" replay "$SRC/testdata/jobs/collectives_tp4.json" --dump "$tmp/dump" --trace "$tmp/trace.json" > "$tmp/out.txt"
python3 "$SRC/tests/scripts/replay_reference.py" "$tmp/dump" "$tmp/trace.json"
