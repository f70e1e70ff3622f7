#!/bin/bash
# Point-to-point replay: a ring exchange (each rank sends its tensor to the next rank with send_v2
# and receives the previous rank's with recv_v2, one group) on 2 and 4 ranks, in the legacy and
# the PIR spelling (pd_op.p_send / pd_op.p_recv). On the local backend and under mpirun with the
# mpi backend, `check` against the same y computed by an all-gather and a slice must be bitwise
# equal, and the two backends' dumps identical. Exit 77 (skipped) when mpirun or the mpi backend
# is missing; the local half still runs first.
set -u
SP_OPT=$1 SRC=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# ring N DIALECT: the exchange job; ref N: the all-gather + slice job (text form).
ring() {
  local n=$1 dialect=$2 next="" prev="" r
  for ((r = 0; r < n; r++)); do next+="$r: $(((r + 1) % n)), "; prev+="$r: $(((r + n - 1) % n)), "; done
  echo "sp-opt.program text 1"; echo "world_size $n"; echo "group ring_id=0 ranks=[$(seq -s, 0 $((n - 1)))]"
  echo "rank 0..$((n - 1)) fetch=[y] {"; echo "  block 0 parent=-1 {"
  echo "    var x_\$rank : float32[2,3]"; echo "    var y : float32[2,3]"
  if [ "$dialect" = pir ]; then
    echo "    {} = pd_op.p_send(in0=[x_\$rank]) {ring_id=0, peer=\$rank{${next%, }}, dynamic_shape=false}"
    echo "    {out0=[y]} = pd_op.p_recv() {ring_id=0, peer=\$rank{${prev%, }}, dtype=\"float32\", dynamic_shape=false}"
  else
    echo "    {} = send_v2(X=[x_\$rank]) {ring_id=0, peer=\$rank{${next%, }}, use_calc_stream=true}"
    echo "    {Out=[y]} = recv_v2() {ring_id=0, peer=\$rank{${prev%, }}, dtype=5, out_shape=[2,3], use_calc_stream=true}"
  fi
  echo "  }"; echo "}"
}
ref() {
  local n=$1 starts="" ends="" r
  for ((r = 0; r < n; r++)); do local p=$(((r + n - 1) % n)); starts+="$r: [$((2 * p))], "; ends+="$r: [$((2 * p + 2))], "; done
  echo "sp-opt.program text 1"; echo "world_size $n"; echo "group ring_id=0 ranks=[$(seq -s, 0 $((n - 1)))]"
  echo "rank 0..$((n - 1)) fetch=[y] {"; echo "  block 0 parent=-1 {"
  echo "    var x_\$rank : float32[2,3]"; echo "    var g : float32[$((2 * n)),3]"; echo "    var y : float32[2,3]"
  echo "    {Out=[g]} = c_allgather(X=[x_\$rank]) {ring_id=0, nranks=$n}"
  echo "    {Out=[y]} = slice(Input=[g]) {axes=[0], starts=\$rank{${starts%, }}, ends=\$rank{${ends%, }}, decrease_axis=[], infer_flags=[1]}"
  echo "  }"; echo "}"
}

for n in 2 4; do
  ref "$n" > "$tmp/ref$n.sptxt"
  for dialect in legacy pir; do
    job=$tmp/ring${n}_$dialect.sptxt
    ring "$n" "$dialect" > "$job"
    "$SP_OPT" validate "$job" > /dev/null || bad "validate $job"
    "$SP_OPT" check "$job" "$tmp/ref$n.sptxt" --rtol 0 --atol 0 > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; bad "local check, $n ranks, $dialect"; }
    "$SP_OPT" replay "$job" --dump "$tmp/local_${n}_$dialect" > /dev/null || bad "local replay, $n ranks, $dialect"
    echo "ok: local, $n ranks, $dialect: the ring exchange equals all-gather + slice bitwise"
  done
done

command -v mpirun > /dev/null || { echo "skipped: mpirun not found"; exit $([ $fail = 0 ] && echo 77 || echo 1); }
if "$SP_OPT" replay "$tmp/ring2_legacy.sptxt" --backend mpi 2>&1 | grep -q "not built"; then
  echo "skipped: sp-opt was built without the mpi backend"; exit $([ $fail = 0 ] && echo 77 || echo 1)
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for n in 2 4; do
  for dialect in legacy pir; do
    job=$tmp/ring${n}_$dialect.sptxt
    timeout 120 mpirun -n "$n" --oversubscribe "$SP_OPT" check "$job" "$tmp/ref$n.sptxt" --backend mpi --rtol 0 --atol 0 \
      > "$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; bad "mpi check, $n ranks, $dialect"; }
    timeout 120 mpirun -n "$n" --oversubscribe "$SP_OPT" replay "$job" --backend mpi --dump "$tmp/mpi_${n}_$dialect" > /dev/null \
      || bad "mpi replay, $n ranks, $dialect"
    diff -r "$tmp/local_${n}_$dialect" "$tmp/mpi_${n}_$dialect" > /dev/null || bad "$n ranks, $dialect: local and mpi dumps differ"
    echo "ok: mpi, $n ranks, $dialect: bitwise equal to all-gather + slice and to the local backend"
  done
done
exit $fail
