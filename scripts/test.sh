#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build with every test (unit, golden, script, MPI,
# browser), sp-opt's threads under ThreadSanitizer, the same suite under ASan+UBSan, and a short
# libFuzzer run over the loader.
# Environment: JOBS (parallel build/test jobs), FUZZ_SECONDS (default 60), SKIP_SANITIZE=1 (no
# sanitizer builds, so no fuzzers either).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# stage NAME: starts a stage (and ends the one before); the wall time of each is printed at the end.
stage_table="" stage_name="" stage_t0=$SECONDS
stage() {
  [ -n "$stage_name" ] && stage_table+=$(printf '%6d s  %s' $((SECONDS - stage_t0)) "$stage_name")$'\n'
  stage_name=$1 stage_t0=$SECONDS
  [ -n "$1" ] && echo "== $1"
  return 0
}

stage "build (warnings are errors)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPOPT_WERROR=ON >/dev/null
cmake --build build -j"$JOBS"
stage "tests"
(cd build && ctest --output-on-failure -j"$JOBS")

# The threads (the loader's, the passes' per-rank work, replay's ranks and streams) under
# ThreadSanitizer: sp-opt alone, then the script that rewrites multi-rank jobs on one thread and
# on every core and the one that replays a streamed job with sends, receives and an emulated link;
# any report fails it.
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  stage "rewrite and replay under ThreadSanitizer"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPOPT_TSAN=ON -DSPOPT_WERROR=ON -DSPOPT_NCCL=OFF >/dev/null
  cmake --build build-tsan -j"$JOBS" --target sp-opt
  TSAN_OPTIONS=halt_on_error=1:exitcode=66 bash tests/scripts/threads_same_output.sh build-tsan/sp-opt
  TSAN_OPTIONS=halt_on_error=1:exitcode=66 bash tests/scripts/replay_threads.sh build-tsan/sp-opt
fi

# The sanitizer build: clang when it is there, so that the same ASan+UBSan objects (compiled with
# libFuzzer's coverage hooks) also make the fuzz targets -- one build instead of two.
have_fuzz=0
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  sanitize_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPOPT_SANITIZE=ON -DSPOPT_WERROR=ON -DSPOPT_NCCL=OFF)
  if command -v clang++ >/dev/null; then
    have_fuzz=1
    sanitize_flags+=(-DSPOPT_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  fi
  stage "build under ASan+UBSan"
  cmake -S . -B build-sanitize "${sanitize_flags[@]}" >/dev/null
  cmake --build build-sanitize -j"$JOBS"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0
  # The long sweeps run a short form here (scripts read SPOPT_SHORT_SWEEPS): the sanitizers look
  # for memory errors on each code path; the first stage has checked every case's numbers.
  export SPOPT_SHORT_SWEEPS=1
  stage "tests under ASan+UBSan"
  (cd build-sanitize && ctest --output-on-failure -j"$JOBS" -LE '^mpi$')
  # OpenMPI's dlopen'd components leak at exit and cannot be symbolised (so not suppressed by
  # name): tests labelled mpi (they start mpirun) check memory errors with leak detection off.
  (cd build-sanitize && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ctest --output-on-failure -L '^mpi$')
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS SPOPT_SHORT_SWEEPS
fi

# One libFuzzer run: its log goes to a file; on a finding, the report and the input (base64, so a
# CI log is enough to reproduce it) are printed before the suite fails.
fuzz_dir=""
run_fuzzer() {
  local name=$1 seconds=$2 max_len=$3 corpus=$4 log
  log="$fuzz_dir/$name.log"
  if build-sanitize/tests/"$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
       -artifact_prefix="$fuzz_dir/$name-" "$corpus" testdata/fuzz-regressions >"$log" 2>&1; then
    tail -2 "$log"
    return 0
  fi
  echo "!! $name found an input that fails; its report:"
  grep -v '^#[0-9]' "$log" | tail -60
  for f in "$fuzz_dir/$name"-*; do
    [ -f "$f" ] && { echo "!! input $f (base64):"; base64 -w 0 "$f"; echo; }
  done
  return 1
}

if [ "$have_fuzz" = 1 ]; then
  fuzz_dir=$(mktemp -d); trap 'rm -rf "$fuzz_dir"' EXIT
  stage "libFuzzer over loader + verifier + writer + replay planning (${FUZZ_SECONDS:-60} s)"
  mkdir "$fuzz_dir"/jobs "$fuzz_dir"/text "$fuzz_dir"/programdesc "$fuzz_dir"/paddle-text "$fuzz_dir"/pir
  cp testdata/jobs/*.json testdata/bad/*.json "$fuzz_dir"/jobs/
  run_fuzzer fuzz-loader "${FUZZ_SECONDS:-60}" 65536 "$fuzz_dir"/jobs
  stage "libFuzzer over the text reader + writer round trip (${FUZZ_TEXT_SECONDS:-30} s)"
  for f in testdata/bad/*.sptxt testdata/golden/*/in.sptxt testdata/golden/*/expected/*.sptxt; do
    cp "$f" "$fuzz_dir/text/$(echo "$f" | tr / _)"
  done
  run_fuzzer fuzz-text-reader "${FUZZ_TEXT_SECONDS:-30}" 65536 "$fuzz_dir"/text
  stage "libFuzzer over the Paddle readers (${PADDLE_FUZZ_SECONDS:-15} s each)"
  cp testdata/paddle/*.pdmodel testdata/paddle/*__model__ "$fuzz_dir"/programdesc/
  cp testdata/paddle/bad_missing_brace.txt "$fuzz_dir"/paddle-text/
  head -c 60000 testdata/paddle/resnet_dp_start_program.txt1 > "$fuzz_dir"/paddle-text/start_head.txt
  run_fuzzer fuzz-programdesc "${PADDLE_FUZZ_SECONDS:-15}" 200000 "$fuzz_dir"/programdesc
  run_fuzzer fuzz-paddle-text "${PADDLE_FUZZ_SECONDS:-15}" 65536 "$fuzz_dir"/paddle-text
  stage "libFuzzer over the PIR readers (${PIR_FUZZ_SECONDS:-20} s each)"
  cp testdata/pir/*.pirjson testdata/pir/real/* "$fuzz_dir"/pir/
  run_fuzzer fuzz-pir-json "${PIR_FUZZ_SECONDS:-20}" 262144 "$fuzz_dir"/pir
  run_fuzzer fuzz-pir-text "${PIR_FUZZ_SECONDS:-20}" 65536 "$fuzz_dir"/pir
else
  echo "== libFuzzer skipped: clang++ is not installed, or SKIP_SANITIZE=1"
fi
stage ""
echo "== wall time per stage"
printf '%s' "$stage_table"
echo "== all tests passed"
