#!/usr/bin/env python3
"""Where a prediction and a run part ways: a rank's time per op type, and its step taken apart,
measured (`replay --trace`, one or more runs) against simulated (`analyze --trace`).

    scripts/compare-traces.py REPLAY_TRACE [REPLAY_TRACE...] ANALYZE_TRACE [--rank R] [--top N]
    scripts/compare-traces.py ... --summary   # one line: the step taken apart (for scripts)

Both traces are Chrome trace-event JSON with one complete event ("ph": "X") per op run; a
communicating collective names its ring in args.ring (both traces). Ops are matched by rank and
op index. A collective's time is split in two: waiting for its peers (from its start to the
moment the last member of its ring started it: the k-th collective of a ring on every member is
one) and the time after (what the link and the copy took, what the model's collective cost is).
Each replay trace has its own clock per rank (its thread's start): the ranks' clocks are aligned
by the median difference of the ends of their shared collectives, which end together (a
collective's members leave when the last one is done; the emulated link wakes them all at once).

With several replay traces, each op's measured time is its least disturbed one, the minimum over
the runs (on a shared machine a run's op waits for a core now and then), and the step line gives
the run of the shortest step. The per-type table's ratio is measured / predicted; the summary
splits the step into compute (busy time of compute ops, all streams), link (the time the rank's
link is busy: collectives after their last member arrived, concurrent ones once), peer waits (collectives before it), and the compute stream's idle
time (span minus its busy time: waits on other streams, and the executor's own time between
ops: allocating and zeroing outputs, generating program inputs, which no op's time holds).
"""
import argparse
import json
import statistics
from collections import defaultdict


def union_length(intervals):
    """The time covered by (start, end) intervals, overlaps counted once."""
    total, end = 0.0, float("-inf")
    for s, t in sorted(intervals):
        total += max(0.0, t - max(s, end))
        end = max(end, t)
    return total


class Trace:
    """One rank-keyed view of a trace: per (rank, op index) its event, per rank its default stream."""

    def __init__(self, path):
        with open(path) as f:
            data = json.load(f)
        events = data["traceEvents"] if isinstance(data, dict) else data
        self.ops = {}
        self.default_tid = {}
        for e in events:
            if e.get("ph") != "X":
                continue
            op = e["args"]["op"]
            index = int(op.rsplit("/", 1)[1]) if isinstance(op, str) else int(op)
            self.ops[(e["pid"], index)] = e
            # The compute stream: tid 0 (analyze) or tid = rank (replay); other streams come after it.
            self.default_tid[e["pid"]] = min(self.default_tid.get(e["pid"], e["tid"]), e["tid"])
        self.arrival = self._arrivals()

    def ranks(self):
        return sorted(self.default_tid)

    def _arrivals(self):
        """(rank, op) -> when the last member of the collective started it, in that rank's clock."""
        by_ring = defaultdict(lambda: defaultdict(list))  # ring -> rank -> events in issue order
        for (rank, _), e in self.ops.items():
            if "ring" in e["args"]:
                by_ring[e["args"]["ring"]][rank].append(e)
        for ring in by_ring.values():
            for events in ring.values():
                events.sort(key=lambda e: e["ts"])
        offset = self._clock_offsets(by_ring)
        arrival = {}
        for ring in by_ring.values():
            depth = min(len(v) for v in ring.values())
            for k in range(depth):
                members = {r: v[k] for r, v in ring.items()}
                last = max(e["ts"] + offset[r] for r, e in members.items())
                for r, e in members.items():
                    arrival[(r, _index(e))] = last - offset[r]
        return arrival

    def _clock_offsets(self, by_ring):
        """rank -> what to add to its clock to read the first rank's (0 for a simulated trace)."""
        ranks = sorted({r for ring in by_ring.values() for r in ring})
        offset = {r: 0.0 for r in ranks}
        if not ranks:
            return offset
        base = ranks[0]
        for r in ranks[1:]:
            diffs = []
            for ring in by_ring.values():
                if base in ring and r in ring:
                    diffs += [a["ts"] + a["dur"] - b["ts"] - b["dur"] for a, b in zip(ring[base], ring[r])]
            offset[r] = statistics.median(diffs) if diffs else 0.0
        return offset

    def parts(self, rank):
        """(op index -> (name, is_collective, busy_us, peer_wait_us, end_us)) of one rank."""
        out = {}
        for (r, index), e in self.ops.items():
            if r != rank:
                continue
            if "ring" in e["args"]:
                start = max(e["ts"], self.arrival.get((r, index), e["ts"]))
                out[index] = (e["name"], True, e["ts"] + e["dur"] - start, start - e["ts"], e["ts"] + e["dur"])
            else:
                out[index] = (e["name"], False, e["dur"], 0.0, e["ts"] + e["dur"])
        return out

    def summary(self, rank):
        """The rank's step taken apart (microseconds)."""
        mine = [e for (r, _), e in self.ops.items() if r == rank]
        span = max(e["ts"] + e["dur"] for e in mine) - min(0.0, min(e["ts"] for e in mine))
        compute = wait = 0.0
        link_busy = []  # after the last member arrived
        for _, is_coll, busy, peer_wait, end in self.parts(rank).values():
            if is_coll:
                wait += peer_wait
                link_busy.append((end - busy, end))
            else:
                compute += busy
        # A send and the receive beside it (one step of a ring exchange, the link's two directions)
        # run at once: the link's time counts them once.
        link = union_length(link_busy)
        busy0 = union_length((e["ts"], e["ts"] + e["dur"]) for e in mine if e["tid"] == self.default_tid[rank])
        return {"span": span, "compute": compute, "link": link, "peer_wait": wait, "stream0_idle": span - busy0}


def _index(e):
    op = e["args"]["op"]
    return int(op.rsplit("/", 1)[1]) if isinstance(op, str) else int(op)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", help="REPLAY_TRACE... ANALYZE_TRACE")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--top", type=int, default=20, help="rows, the largest measured first")
    parser.add_argument("--summary", action="store_true", help="one line: measured and predicted step taken apart (ms)")
    args = parser.parse_args()
    if len(args.traces) < 2:
        parser.error("give at least one replay trace and the analyze trace")
    runs = [Trace(p) for p in args.traces[:-1]]
    predicted = Trace(args.traces[-1])
    if any(args.rank not in t.default_tid for t in runs + [predicted]):
        raise SystemExit(f"compare-traces: rank {args.rank} has no op events in one of the traces")

    best = min(runs, key=lambda t: t.summary(args.rank)["span"])
    m, p = best.summary(args.rank), predicted.summary(args.rank)
    if args.summary:
        keys = ("span", "compute", "link", "peer_wait", "stream0_idle")
        print(" ".join(f"{m[k] / 1e3:.1f}" for k in keys), " ".join(f"{p[k] / 1e3:.1f}" for k in keys))
        return

    measured = defaultdict(lambda: [0.0, 0])  # name -> [least disturbed us summed, runs]
    waits = defaultdict(float)
    run_parts = [t.parts(args.rank) for t in runs]
    for index, (name, *_) in run_parts[0].items():
        times = [rp[index] for rp in run_parts if index in rp]
        measured[name][0] += min(t[2] for t in times)
        measured[name][1] += 1
        waits[name] += min(t[3] for t in times)
    simulated = defaultdict(float)
    for name, _, busy, *_ in predicted.parts(args.rank).values():
        simulated[name] += busy
    print(f"rank {args.rank}, {len(runs)} run(s): per op type, summed over the step (ms), each op's least disturbed run; "
          "a collective's time counts from its last member's arrival (the wait before is its own column)")
    print("| op type | ops | measured ms | predicted ms | ratio | waits for peers ms | share of measured |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    total = sum(v[0] for v in measured.values()) or 1.0
    names = sorted(set(measured) | set(simulated), key=lambda n: -measured.get(n, [0])[0])
    for name in names[: args.top]:
        mt, count = measured.get(name, [0.0, 0])
        pt = simulated.get(name, 0.0)
        ratio = f"{mt / pt:.2f}" if pt > 0 else "-"
        wait = f"{waits[name] / 1e3:.3f}" if name in waits and waits[name] > 0 else ""
        print(f"| {name} | {count} | {mt / 1e3:.3f} | {pt / 1e3:.3f} | {ratio} | {wait} | {100 * mt / total:.1f}% |")
    print(f"\nthe step taken apart (ms; measured: the run of the shortest step, rank {args.rank})")
    print("| | step | compute | link (after the last arrival) | waits for peers | compute stream idle |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, s in (("measured", m), ("predicted", p)):
        print(f"| {label} | {s['span'] / 1e3:.1f} | {s['compute'] / 1e3:.1f} | {s['link'] / 1e3:.1f} | "
              f"{s['peer_wait'] / 1e3:.1f} | {s['stream0_idle'] / 1e3:.1f} |")


if __name__ == "__main__":
    main()
