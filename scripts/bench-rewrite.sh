#!/usr/bin/env bash
# Benchmark of `sp-opt rewrite`: the default chain (fuse-allreduce-split, regather-activations,
# decompose-collective-matmul, overlap-collectives, the verifier after each) against the empty
# pipeline (`--passes=`: load, verify, write only) on generated GPT jobs (tp 4, sequence parallel:
# every pass of the chain has work; decompose-collective-matmul weighs every forward site and
# declines them all at this shape) of about 100k, 300k and 1M ops. Per size it prints each pass's
# µs per op and the verifier's after a pass (the slowest of the passes' verifiers, µs per op: the
# figure a per-pass budget reads), both from `--timing` (wall time; a plain
# rewrite's work: no statistics collected, no explanations built), the process's user+sys CPU
# seconds of both pipelines and their ratio (the steadier figure on a shared machine), the wall
# ratio and the peak RSS of the full chain; then both ratios once more as the median of each
# round's own pair (the full chain and the empty pipeline run back to back, in either order by
# turns), which the machine's drift between rounds moves less than a ratio of two bests; and the
# ratio from the runs' own phases (--timing's load+verify, passes and write), the load taken as
# one for both pipelines: on this VM a process's first touches of memory cost from 0.3 to 2.5 s
# of system time at 1M ops (the host backs freed guest memory again), which moves the load of
# either pipeline by half a second. A binary without --timing is read
# through --stats (the same lines; such a binary computed its statistics whether asked or not).
#
# With --before OLD, every cell reads "old -> new": both binaries on the same files, their runs
# interleaved so that the machine's load weighs on both alike; best of SPOPT_BENCH_REPEAT runs
# (default 3) for each figure.
#
# Usage: scripts/bench-rewrite.sh [--before OLD_SP_OPT] [SP_OPT] [TARGET_OPS...]
#   SP_OPT defaults to build/sp-opt; TARGET_OPS to "100000 300000 1000000".
#   SPOPT_BENCH_GEN=path uses another binary for `sp-opt gen`.
#   SPOPT_BENCH_SHAPE="..." replaces the gen options after the model (default below); e.g.
#   "--tp 4 --hidden 1024 --heads 16 --seq 1024 --batch 8 --sequence-parallel", a shape at which
#   overlap-collectives reorders under its default preset (at the default shape it refuses every
#   collective, so its time is almost all analysis).
#   SPOPT_BENCH_REWRITE_ARGS="..." adds options to every rewrite (both pipelines, every binary);
#   e.g. "--threads 1": the passes' per-rank work and the loader on one core (a binary older than
#   --threads does not take it).
#   Not part of ctest. Needs /usr/bin/time (GNU time) and python3.
set -euo pipefail

BEFORE=
if [[ ${1:-} == --before ]]; then
  BEFORE=$2
  shift 2
fi
SP_OPT=${1:-build/sp-opt}
shift || true
TARGETS=${*:-100000 300000 1000000}
GEN=${SPOPT_BENCH_GEN:-$SP_OPT}
REPEAT=${SPOPT_BENCH_REPEAT:-3}
WORK=$(mktemp -d /tmp/bench-rewrite.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

exec python3 - "$WORK" "$GEN" "$REPEAT" "$SP_OPT" "$BEFORE" $TARGETS <<'PY'
import os, re, statistics, subprocess, sys, time

work, gen, repeat, after, before = sys.argv[1:6]
targets = [int(t) for t in sys.argv[6:]]
repeat = int(repeat)
OUT = os.path.join(work, "out.json")  # every timed run's output
binaries = [("before", before), ("after", after)] if before else [("after", after)]
SHAPE = os.environ.get("SPOPT_BENCH_SHAPE", "--tp 4 --hidden 64 --heads 4 --seq 16 --batch 2 --sequence-parallel").split()
EXTRA = os.environ.get("SPOPT_BENCH_REWRITE_ARGS", "").split()

def generate(layers, path):
    out = subprocess.run([gen, "gen", "gpt", "--layers", str(layers), *SHAPE, "-o", path], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"(\d+) ops", out).group(1))

def timed(binary, args):
    """Runs `binary rewrite args`; returns (wall s, user+sys s, peak RSS KiB, stderr). Wall time from
    the monotonic clock, CPU time and peak RSS from wait4's rusage: /usr/bin/time's 10 ms steps are
    4% of a 100k-op run."""
    if os.path.exists(OUT):
        os.remove(OUT)
    os.sync()
    errpath = os.path.join(work, "stderr.txt")
    with open(errpath, "w") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([binary, "rewrite", *EXTRA, *args], stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    stderr = open(errpath).read()
    if proc.returncode != 0:
        sys.exit(f"bench-rewrite: {binary} rewrite {' '.join(args)} failed:\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stderr

timing_flag = {}
def timingFlag(binary):
    """--timing, or --stats for a binary older than it."""
    if binary not in timing_flag:
        r = subprocess.run([binary, "rewrite", "--help"], capture_output=True, text=True)
        timing_flag[binary] = "--timing" if "--timing" in r.stdout else "--stats"
    return timing_flag[binary]

PASS_LINE = re.compile(r"^  (\S+): ([0-9.]+) ms \(verify ([0-9.]+) ms\)", re.M)
LOAD_LINE = re.compile(r"load\+verify ([0-9.]+) ms")
WRITE_LINE = re.compile(r"^write: ([0-9.]+) ms", re.M)

def phaseRatio(r):
    """The chain against the empty pipeline from the runs' own phases, both pipelines' load+verify
    taken as one (the same work, the median of all their runs): what the passes and the larger
    write add, without the load's swings on this VM (0.5 s either way at 1M ops)."""
    if not r.get("passes_total") or not r.get("writes_empty"):
        return float("nan")
    load = statistics.median(r["loads"])
    return (load + statistics.median(r["passes_total"]) + statistics.median(r["writes_full"])) / (load + statistics.median(r["writes_empty"]))

def measure(binary, job, best, empty_first):
    """One run of the full chain and one of the empty pipeline, back to back (the empty one first when
    `empty_first`: on this VM a process runs faster or slower by what the one before it left in
    memory, so rounds alternate the order); keeps the best of each figure in `best`."""
    def keep(key, v):
        best[key] = min(best.get(key, v), v)
    def phases(err, passes=None):
        """The run's load+verify and write, and for the full chain (`passes`: its passes' and verifiers'
        total) that total (--timing; a binary older than the write's line has none)."""
        load, write = LOAD_LINE.search(err), WRITE_LINE.search(err)
        if load and write:
            best.setdefault("loads", []).append(float(load.group(1)))
            best.setdefault("writes_empty" if passes is None else "writes_full", []).append(float(write.group(1)))
            if passes is not None:
                best.setdefault("passes_total", []).append(passes)
    empty_args = [job, OUT, "--passes="] + (["--timing"] if timingFlag(binary) == "--timing" else [])
    if empty_first:
        empty = timed(binary, empty_args)
    wall, cpu, rss, err = timed(binary, [job, OUT, timingFlag(binary)])
    keep("full_wall", wall); keep("full_cpu", cpu); keep("full_rss", rss)
    passes = [(name, float(t), float(v)) for name, t, v in PASS_LINE.findall(err)]
    if not passes:
        sys.exit(f"bench-rewrite: no pass times in {binary}'s output:\n{err}")
    for name, t, _ in passes:
        keep("pass:" + name, t)
    keep("verify", max(v for _, _, v in passes))
    best.setdefault("names", [name for name, _, _ in passes])
    phases(err, sum(t + v for _, t, v in passes))
    full_wall, full_cpu = wall, cpu
    wall, cpu, rss, err = empty if empty_first else timed(binary, empty_args)
    phases(err)
    keep("empty_wall", wall); keep("empty_cpu", cpu)
    # The same round's pair: a ratio the machine's drift between rounds does not move.
    best.setdefault("round_wall", []).append(full_wall / wall)
    best.setdefault("round_cpu", []).append(full_cpu / cpu)

# ops = base + per_layer * layers, from two small jobs.
o1 = generate(1, os.path.join(work, "l1.json"))
o2 = generate(2, os.path.join(work, "l2.json"))
per_layer, base = o2 - o1, o1 - (o2 - o1)

load = open("/proc/loadavg").read().split()[:3]
print(f"sp-opt rewrite {' '.join(EXTRA)}: gen gpt {' '.join(SHAPE)} ({per_layer} ops per layer); best of {repeat}; {os.cpu_count()} CPUs; load at start {' '.join(load)}")
if before:
    print(f"before: {before}\nafter:  {after}")
print()
header_done = False
for target in targets:
    layers = max(1, round((target - base) / per_layer))
    job = os.path.join(work, "job.json")
    ops = generate(layers, job)
    mb = os.path.getsize(job) / 1e6
    res = {}
    # Interleaved: each round runs every binary once, alternating which goes first.
    for rnd in range(repeat):
        order = binaries if rnd % 2 == 0 else binaries[::-1]
        for label, binary in order:
            measure(binary, job, res.setdefault(label, {}), empty_first=(rnd // 2) % 2 == 1)
    names = res["after"]["names"]
    def cell(fmt, f):
        vals = [fmt.format(f(res[label])) for label, _ in binaries]
        return " -> ".join(vals)
    us = lambda ms: ms * 1000.0 / ops
    cells = [str(ops), f"{mb:.0f}"]
    cells += [cell("{:.2f}", lambda r, n=n: us(r.get("pass:" + n, float("nan")))) for n in names]
    cells += [cell("{:.2f}", lambda r: us(r["verify"])),
              cell("{:.2f}", lambda r: r["full_cpu"]), cell("{:.2f}", lambda r: r["empty_cpu"]),
              cell("{:.2f}", lambda r: r["full_cpu"] / r["empty_cpu"]), cell("{:.2f}", lambda r: r["full_wall"] / r["empty_wall"]),
              cell("{:.2f}", lambda r: statistics.median(r["round_cpu"])), cell("{:.2f}", lambda r: statistics.median(r["round_wall"])),
              cell("{:.2f}", phaseRatio),
              cell("{:.0f}", lambda r: r["full_rss"] / 1024)]
    if not header_done:
        cols = ["ops", "file MB"] + [f"{n} µs/op" for n in names] + ["verify after a pass (slowest) µs/op", "full CPU s", "empty CPU s",
                                                                     "full/empty CPU", "full/empty wall", "full/empty CPU, median of rounds",
                                                                     "full/empty wall, median of rounds", "full/empty from phases", "full RSS MiB"]
        header_done = True
        print("| " + " | ".join(cols) + " |")
        print("|" + "---:|" * len(cols))
    print("| " + " | ".join(cells) + " |", flush=True)
print(f"\nload at end {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
