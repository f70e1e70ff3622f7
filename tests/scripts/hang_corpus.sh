#!/bin/bash
# validate against replay on a corpus of jobs that hang (tests/scripts/hang_corpus.py): crossed
# rings on 2, 3 and 4 ranks, two streams waiting on each other's events, a collective behind an
# event recorded after another, a collective in a sub-block on one rank, and controls that do not
# hang. Prints a table, one row per job: what validate says and what replay --timeout does on the
# local backend and, when mpirun and the mpi backend are there, under mpirun. Fails on any row
# where they disagree. (A sub-block is beyond replay, which refuses the job: that row expects the
# refusal.)
set -u
SP_OPT=$1 SRC=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TIMEOUT=${HANG_TIMEOUT:-2}
mpi=no
if command -v mpirun > /dev/null && ! "$SP_OPT" replay "$SRC/testdata/jobs/hand_tp2_legacy.json" --backend mpi 2>&1 | grep -q "not built"; then
  mpi=yes
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fi
fail=0
python3 "$SRC/tests/scripts/hang_corpus.py" "$tmp" > "$tmp/list" || { echo "FAIL: hang_corpus.py"; exit 1; }

# replay_outcome RC OUTPUT: "hangs" (timed out), "refused" (exit 2 before running), "ran" (exit 0).
replay_outcome() {
  if [ "$1" -eq 0 ]; then echo ran
  elif echo "$2" | grep -q "timed out after"; then echo hangs
  elif echo "$2" | grep -qE "replay does not support this op|not replayable: "; then echo refused
  else echo "other(rc $1)"; fi
}

printf '%-27s %-8s %-14s %-8s %-8s %s\n' job expect validate local mpi "validate's line"
while read -r name expect ranks; do
  job=$tmp/$name.json
  vout=$("$SP_OPT" validate "$job" 2>&1); vrc=$?
  if [ $vrc -eq 2 ] && echo "$vout" | grep -q ": hang: "; then v=hang
  elif [ $vrc -eq 0 ] && echo "$vout" | grep -q "^warning: .*lost dependency"; then v=lost-dep
  elif [ $vrc -eq 0 ]; then v=valid
  else v="other(rc $vrc)"; fi
  lout=$(timeout 60 "$SP_OPT" replay "$job" --timeout "$TIMEOUT" 2>&1 < /dev/null); lrc=$?
  l=$(replay_outcome $lrc "$lout")
  m=skipped
  if [ $mpi = yes ]; then
    mout=$(timeout 60 mpirun -n "$ranks" "$SP_OPT" replay "$job" --backend mpi --timeout "$TIMEOUT" 2>&1 < /dev/null); mrc=$?
    m=$(replay_outcome $mrc "$mout")
  fi
  case $expect in
    hang) want_v=hang want_r=hangs ;;
    subblock-hang) want_v=hang want_r=refused ;;
    lost) want_v=lost-dep want_r=ran ;;
    valid) want_v=valid want_r=ran ;;
  esac
  ok=yes
  [ "$v" = "$want_v" ] || ok=no
  [ "$l" = "$want_r" ] || ok=no
  [ $mpi = no ] || [ "$m" = "$want_r" ] || ok=no
  line=$(echo "$vout" | grep -E ": hang: |^warning: " | head -1 | sed "s|$tmp/||" | cut -c1-150)
  printf '%-27s %-8s %-14s %-8s %-8s %s\n' "$name" "$expect" "$v" "$l" "$m" "$line"
  if [ $ok = no ]; then
    echo "FAIL: $name: validate says $v (want $want_v), replay local $l, mpi $m (want $want_r)"
    echo "$vout" | head -5; echo "$lout" | tail -3
    fail=1
  fi
done < "$tmp/list"
[ $mpi = yes ] || echo "(mpi column skipped: mpirun or the mpi backend is missing)"
exit $fail
