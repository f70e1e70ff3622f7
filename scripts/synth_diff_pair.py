#!/usr/bin/env python3
"""Writes a large job and its fused rewrite, for timing `sp-opt diff` without `sp-opt gen`.

Each rank runs LAYERS sequence-parallel blocks: all_gather -> matmul_v2 -> all_reduce -> split ->
gelu. The rewrite replaces each all_reduce + split by one reduce_scatter (what the fusion pass does),
so the diff has work in every layer. Ops: ranks x layers x 5 before, x 4 after.
Usage: synth_diff_pair.py RANKS LAYERS BEFORE.json AFTER.json
"""
import sys

def job(ranks, layers, fused):
    S, H = 2048, 1024
    mesh = '"process_mesh": {"shape": [%d], "process_ids": [%s], "dim_names": ["mp"]}' % (
        ranks, ", ".join(map(str, range(ranks))))
    out = ['{"format": "sp-opt.program", "version": 1, "world_size": %d,' % ranks,
           ' "process_groups": [{"ring_id": 0, "ranks": [%s]}],' % ", ".join(map(str, range(ranks))),
           ' "programs": [']
    for r in range(ranks):
        vs = ['{"name": "z_0", "shape": [%d, %d], "dtype": "float32", "dist_attr": {%s, "dims_mapping": [0, -1]}}'
              % (S // ranks, H, mesh)]
        ops = []
        for i in range(1, layers + 1):
            p = i - 1
            vs += ['{"name": "xf_%d", "shape": [%d, %d], "dtype": "float32"}' % (i, S, H),
                   '{"name": "w_%d", "shape": [%d, %d], "dtype": "float32", "persistable": true}' % (i, H, H),
                   '{"name": "y_%d", "shape": [%d, %d], "dtype": "float32"}' % (i, S, H),
                   '{"name": "z_%d", "shape": [%d, %d], "dtype": "float32"}' % (i, S // ranks, H)]
            chunks = ["ys_%d_%d" % (i, k) for k in range(ranks)]
            if fused:
                vs.append('{"name": "%s", "shape": [%d, %d], "dtype": "float32"}' % (chunks[r], S // ranks, H))
            else:
                vs.append('{"name": "ys_%d", "shape": [%d, %d], "dtype": "float32"}' % (i, S, H))
                vs += ['{"name": "%s", "shape": [%d, %d], "dtype": "float32"}' % (c, S // ranks, H) for c in chunks]
            ops.append('{"type": "all_gather", "inputs": {"x": ["z_%d"]}, "outputs": {"out": ["xf_%d"]}, '
                       '"attrs": {"ring_id": 0, "nranks": %d, "op_role": 0}}' % (p, i, ranks))
            ops.append('{"type": "matmul_v2", "inputs": {"X": ["xf_%d"], "Y": ["w_%d"]}, "outputs": {"Out": ["y_%d"]}, '
                       '"attrs": {"trans_x": false, "trans_y": false, "op_role": 0}}' % (i, i, i))
            if fused:
                ops.append('{"type": "reduce_scatter", "inputs": {"x": ["y_%d"]}, "outputs": {"out": ["%s"]}, '
                           '"attrs": {"ring_id": 0, "nranks": %d, "op_role": 0}}' % (i, chunks[r], ranks))
            else:
                ops.append('{"type": "all_reduce", "inputs": {"x": ["y_%d"]}, "outputs": {"out": ["ys_%d"]}, '
                           '"attrs": {"ring_id": 0, "reduce_type": 0, "op_role": 0}}' % (i, i))
                ops.append('{"type": "split", "inputs": {"X": ["ys_%d"]}, "outputs": {"Out": [%s]}, '
                           '"attrs": {"axis": 0, "num": %d, "op_role": 0}}' % (i, ", ".join('"%s"' % c for c in chunks), ranks))
            ops.append('{"type": "gelu", "inputs": {"X": ["%s"]}, "outputs": {"Out": ["z_%d"]}, '
                       '"attrs": {"approximate": false, "op_role": 0}}' % (chunks[r], i))
        out.append('  {"rank": %d, "fetch": ["z_%d"], "blocks": [{"idx": 0, "parent_idx": -1,' % (r, layers))
        out.append('   "vars": [\n    ' + ",\n    ".join(vs) + '],')
        out.append('   "ops": [\n    ' + ",\n    ".join(ops) + ']}]}' + ("," if r + 1 < ranks else ""))
    out.append(']}')
    return "\n".join(out) + "\n"

def main():
    ranks, layers = int(sys.argv[1]), int(sys.argv[2])
    for path, fused in ((sys.argv[3], False), (sys.argv[4], True)):
        with open(path, "w") as f:
            f.write(job(ranks, layers, fused))

if __name__ == "__main__":
    main()
