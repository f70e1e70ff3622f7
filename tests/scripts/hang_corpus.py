#!/usr/bin/env python3
"""Test aid: a corpus of small jobs, each of which hangs (or, for the controls, does not), for
tests/scripts/hang_corpus.sh, which runs `validate` and `replay --timeout` on each.
  hang_corpus.py OUT_DIR      writes OUT_DIR/NAME.json and prints one "NAME EXPECT RANKS" line each
EXPECT: hang (validate reports a cycle or a collective without partner, replay times out),
subblock-hang (validate reports the cycle; replay cannot run sub-blocks and refuses the job),
lost (valid with a lost-dependency warning; replay runs to the end), valid (no warning)."""
import json, os, sys

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)

def var(n): return {"name": n, "shape": [4, 3], "dtype": "float32"}
def allreduce(ring, x, y, stream="default", record="", wait=()):
    da = {"execution_stream": stream}
    if record: da["event_to_record"] = record
    if wait: da["events_to_wait"] = list(wait)
    return {"type": "c_allreduce_sum", "inputs": {"X": [x]}, "outputs": {"Out": [y]},
            "attrs": {"ring_id": ring, "op_role": 1}, "dist_attr": da}
def scale(x, y, stream="default", record=""):
    da = {"execution_stream": stream}
    if record: da["event_to_record"] = record
    return {"type": "scale", "inputs": {"X": [x]}, "outputs": {"Out": [y]},
            "attrs": {"scale": 2.0, "bias": 0.0, "bias_after_scale": True, "op_role": 0}, "dist_attr": da}
def add(x, y, z):
    return {"type": "elementwise_add", "inputs": {"X": [x], "Y": [y]}, "outputs": {"Out": [z]}, "attrs": {"axis": -1}}
def program(rank, ops, outs, blocks=()):
    names = ["x"] + [n for n in outs]
    return {"rank": rank, "fetch": [outs[-1]], "blocks": [{"idx": 0, "parent_idx": -1, "vars": [var(n) for n in names], "ops": ops}] + list(blocks)}
def job(name, expect, world, rings, progs):
    json.dump({"format": "sp-opt.program", "version": 1, "world_size": world,
               "process_groups": [{"ring_id": r, "ranks": m} for r, m in rings], "programs": progs},
              open(os.path.join(out_dir, name + ".json"), "w"), indent=1)
    print(name, expect, world)

# Two rings over the same two ranks, issued in opposite orders on one stream.
both = [(0, [0, 1]), (1, [0, 1])]
for rank_order, name, expect in (([(0, 1), (1, 0)], "crossed_rings_2", "hang"), ([(0, 1), (0, 1)], "same_order_2", "valid")):
    progs = []
    for rank, (first, second) in enumerate(rank_order):
        outs = {0: "a", 1: "b"}
        progs.append(program(rank, [allreduce(first, "x", outs[first]), allreduce(second, "x", outs[second]), add("a", "b", "z")], ["a", "b", "z"]))
    job(name, expect, 2, both, progs)

# N ranks in a ring of pairs: ring r joins ranks r and r+1; rank r issues ring r, then ring r-1.
# Each waits at its first collective for its right neighbour, which waits for its own.
for n in (3, 4):
    rings = [(r, [r, (r + 1) % n]) for r in range(n)]
    progs = [program(r, [allreduce(r, "x", "a"), allreduce((r - 1) % n, "x", "b"), add("a", "b", "z")], ["a", "b", "z"]) for r in range(n)]
    job("crossed_rings_%d" % n, "hang", n, rings, progs)

# Each rank's two streams wait on each other's events: rank 0's ring-1 collective (stream s1)
# waits for its ring-0 one (s0); rank 1's ring-0 collective waits for its ring-1 one.
job("streams_wait_on_events", "hang", 2, both, [
    program(0, [allreduce(0, "x", "a", "s0", record="e0"), allreduce(1, "x", "b", "s1", wait=["e0"]), add("a", "b", "z")], ["a", "b", "z"]),
    program(1, [allreduce(1, "x", "b", "s1", record="e1"), allreduce(0, "x", "a", "s0", wait=["e1"]), add("a", "b", "z")], ["a", "b", "z"])])

# Rank 0's ring-1 collective (stream comm) waits for an event recorded after its ring-0
# collective; rank 1 issues ring 1 before ring 0 on one stream.
job("collective_behind_event", "hang", 2, both, [
    program(0, [allreduce(0, "x", "a"), scale("a", "c", record="e"), allreduce(1, "x", "b", "comm", wait=["e"]), add("c", "b", "z")], ["a", "b", "c", "z"]),
    program(1, [allreduce(1, "x", "b"), allreduce(0, "x", "a"), scale("a", "c"), add("c", "b", "z")], ["a", "b", "c", "z"])])

# Rank 0 issues its ring-1 collective inside a sub-block of an op before its ring-0 one; rank 1
# issues both in its entry block, ring 0 first. Each ring's collectives match in blocks order
# (what the per-ring check compares), but the sub-block runs at its owning op: crossed.
sub = {"idx": 1, "parent_idx": 0, "vars": [], "ops": [allreduce(1, "x", "b")]}
owner = {"type": "conditional_block", "inputs": {"Cond": ["x"], "Input": ["x"]}, "outputs": {"Out": ["b"], "Scope": []},
         "attrs": {"sub_block": 1, "is_scalar_condition": True, "op_role": 1}}
job("subblock_one_rank", "subblock-hang", 2, both, [
    program(0, [owner, allreduce(0, "x", "a"), add("a", "b", "z")], ["a", "b", "z"], [sub]),
    program(1, [allreduce(0, "x", "a"), allreduce(1, "x", "b"), add("a", "b", "z")], ["a", "b", "z"])])

# Controls. The crossed rings with each ring on its own stream run (a communicator per stream).
job("crossed_rings_own_streams", "valid", 2, both, [
    program(0, [allreduce(0, "x", "a", "s0"), allreduce(1, "x", "b", "s1"), add("a", "b", "z")], ["a", "b", "z"]),
    program(1, [allreduce(1, "x", "b", "s1"), allreduce(0, "x", "a", "s0"), add("a", "b", "z")], ["a", "b", "z"])])
# A wait on an event recorded only later orders nothing (CUDA's rule): a lost dependency, no hang.
job("event_recorded_later", "lost", 2, [(0, [0, 1])], [
    program(r, [allreduce(0, "x", "a", "comm", wait=["late"]), scale("x", "c", record="late"), add("a", "c", "z")], ["a", "c", "z"]) for r in (0, 1)])

# Point-to-point (send_v2 / recv_v2): each rank sends x to the next rank of a ring and receives
# the previous rank's. Adjacent, the send and the receive are one group (issued at once, NCCL's
# ncclGroupStart/End): the ring exchange runs. With an op between them each rank blocks in its
# send until its receiver posts the receive, which comes after that receiver's own send: a hang.
def send(ring, x, peer):
    return {"type": "send_v2", "inputs": {"X": [x]}, "outputs": {}, "attrs": {"ring_id": ring, "peer": peer, "use_calc_stream": True}}
def recv(ring, y, peer):
    return {"type": "recv_v2", "inputs": {}, "outputs": {"Out": [y]},
            "attrs": {"ring_id": ring, "peer": peer, "dtype": 5, "out_shape": [4, 3], "use_calc_stream": True}}
for n in (2, 4):
    ring = [(0, list(range(n)))]
    job("p2p_ring_exchange_%d" % n, "valid", n, ring, [
        program(r, [send(0, "x", (r + 1) % n), recv(0, "a", (r - 1) % n), add("a", "x", "z")], ["a", "z"]) for r in range(n)])
    job("p2p_blocking_sends_%d" % n, "hang", n, ring, [
        program(r, [send(0, "x", (r + 1) % n), scale("x", "c"), recv(0, "a", (r - 1) % n), add("a", "c", "z")], ["a", "c", "z"]) for r in range(n)])
# Even ranks send first, odd ranks receive first: the blocking exchange that does not deadlock.
job("p2p_even_odd_2", "valid", 2, [(0, [0, 1])], [
    program(0, [send(0, "x", 1), scale("x", "c"), recv(0, "a", 1), add("a", "c", "z")], ["a", "c", "z"]),
    program(1, [recv(0, "a", 0), scale("x", "c"), send(0, "x", 0), add("a", "c", "z")], ["a", "c", "z"])])
