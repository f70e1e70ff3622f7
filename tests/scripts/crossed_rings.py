#!/usr/bin/env python3
"""Test aid: a 2-rank job with two rings over the same ranks whose all-reduces rank 1 issues in the
opposite order of rank 0. On one stream (per rank) that is a deadlock; with each ring on its own
comm stream it runs, as on GPUs with a NCCL communicator per stream.
  crossed_rings.py OUT STREAM_OF_RING0 STREAM_OF_RING1     ("default" = the compute stream)"""
import json, sys

out, s0, s1 = sys.argv[1], sys.argv[2], sys.argv[3]
def var(n): return {"name": n, "shape": [4, 3], "dtype": "float32"}
def allreduce(ring, x, y, stream):
    return {"type": "c_allreduce_sum", "inputs": {"X": [x]}, "outputs": {"Out": [y]},
            "attrs": {"ring_id": ring, "op_role": 1}, "dist_attr": {"execution_stream": stream}}
progs = []
for rank in (0, 1):
    ars = [allreduce(0, "x", "a", s0), allreduce(1, "x", "b", s1)]
    if rank == 1: ars.reverse()
    ops = ars + [{"type": "elementwise_add", "inputs": {"X": ["a"], "Y": ["b"]}, "outputs": {"Out": ["z"]}, "attrs": {"axis": -1}}]
    progs.append({"rank": rank, "fetch": ["z"], "blocks": [{"idx": 0, "parent_idx": -1,
                  "vars": [var(n) for n in ("x", "a", "b", "z")], "ops": ops}]})
json.dump({"format": "sp-opt.program", "version": 1, "world_size": 2,
           "process_groups": [{"ring_id": 0, "ranks": [0, 1]}, {"ring_id": 1, "ranks": [0, 1]}], "programs": progs},
          open(out, "w"), indent=1)
