#!/usr/bin/env python3
"""Where a prediction and a run part ways: per op type, the time a rank spent in each, measured
(`replay --trace`) against simulated (`analyze --trace`), for one rank.

    scripts/compare-traces.py REPLAY_TRACE ANALYZE_TRACE [--rank R] [--top N]

Both traces are Chrome trace-event JSON with one complete event ("ph": "X") per op run; events are
matched by op type (the event name). A collective's measured time includes waiting for its peers,
so a collective row over 1 says the run waited, not only that the link is slower. The last line is
the rank's span (first start to last end) in each trace: the step as each saw it.
"""
import argparse
import json
from collections import defaultdict


def load_events(path, rank):
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X" and e.get("pid") == rank]


def per_type(events):
    totals = defaultdict(lambda: [0.0, 0])
    for e in events:
        totals[e["name"]][0] += e["dur"]
        totals[e["name"]][1] += 1
    return totals


def span_us(events):
    return max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events) if events else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("replay_trace")
    parser.add_argument("analyze_trace")
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--top", type=int, default=20, help="rows, the largest measured first")
    args = parser.parse_args()
    measured_events = load_events(args.replay_trace, args.rank)
    predicted_events = load_events(args.analyze_trace, args.rank)
    if not measured_events or not predicted_events:
        raise SystemExit(f"compare-traces: rank {args.rank} has no op events in one of the traces")
    measured, predicted = per_type(measured_events), per_type(predicted_events)
    print(f"rank {args.rank}: per op type, summed over the step (ms); ratio = measured / predicted")
    print("| op type | runs | measured ms | predicted ms | ratio | share of measured |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    total_measured = sum(v[0] for v in measured.values())
    names = sorted(set(measured) | set(predicted), key=lambda n: -measured.get(n, [0])[0])
    for name in names[: args.top]:
        m, runs = measured.get(name, [0.0, 0])
        p = predicted.get(name, [0.0, 0])[0]
        ratio = f"{m / p:.2f}" if p > 0 else "-"
        print(f"| {name} | {runs} | {m / 1e3:.3f} | {p / 1e3:.3f} | {ratio} | {100 * m / total_measured:.1f}% |")
    m_span, p_span = span_us(measured_events), span_us(predicted_events)
    print(f"| (span: first start to last end) | | {m_span / 1e3:.3f} | {p_span / 1e3:.3f} | {m_span / p_span:.2f} | |")


if __name__ == "__main__":
    main()
