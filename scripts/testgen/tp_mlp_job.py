#!/usr/bin/env python3
"""Writes a tensor-parallel MLP-block job (forward only) for scripts/bench-replay.sh when
`sp-opt gen` is not available: per layer layer_norm -> column matmul [H, F/T] -> gelu -> row
matmul [F/T, H] -> c_allreduce_sum -> residual add. Weights are sharded with dist_attr, so every
--tp computes the same model under replay's input rule.
Usage: tp_mlp_job.py --tp T --layers L --tokens N --hidden H [--ffn F] -o FILE"""
import argparse, json

def main():
    a = argparse.ArgumentParser()
    a.add_argument('--tp', type=int, default=2)
    a.add_argument('--layers', type=int, default=4)
    a.add_argument('--tokens', type=int, default=512)
    a.add_argument('--hidden', type=int, default=512)
    a.add_argument('--ffn', type=int, default=0)
    a.add_argument('-o', required=True)
    o = a.parse_args()
    T, N, H = o.tp, o.tokens, o.hidden
    F = o.ffn or 4 * H
    assert F % T == 0, '--tp must divide the ffn size'
    mesh = {"shape": [T], "process_ids": list(range(T)), "dim_names": ["mp"]}
    def var(name, shape, mapping=None, persistable=False):
        v = {"name": name, "shape": shape, "dtype": "float32", "persistable": persistable}
        if mapping is not None:
            v["dist_attr"] = {"process_mesh": mesh, "dims_mapping": mapping, "chunk_id": 0}
        return v
    programs = []
    for r in range(T):
        vs, ops = [var("x0", [N, H], [-1, -1])], []
        for l in range(o.layers):
            x, p = "x%d" % l, "l%d." % l
            vs += [var(p + "ln.w", [H], [-1], True), var(p + "ln.b", [H], [-1], True),
                   var(p + "w1", [H, F // T], [-1, 0], True), var(p + "w2", [F // T, H], [0, -1], True),
                   var(p + "ln", [N, H]), var(p + "mean", [N]), var(p + "var", [N]), var(p + "h", [N, F // T]),
                   var(p + "g", [N, F // T]), var(p + "o", [N, H]), var(p + "os", [N, H]), var("x%d" % (l + 1), [N, H])]
            ops += [
                {"type": "layer_norm", "inputs": {"X": [x], "Scale": [p + "ln.w"], "Bias": [p + "ln.b"]},
                 "outputs": {"Y": [p + "ln"], "Mean": [p + "mean"], "Variance": [p + "var"]},
                 "attrs": {"epsilon": 1e-5, "begin_norm_axis": 1}},
                {"type": "matmul_v2", "inputs": {"X": [p + "ln"], "Y": [p + "w1"]}, "outputs": {"Out": [p + "h"]},
                 "attrs": {"trans_x": False, "trans_y": False}},
                {"type": "gelu", "inputs": {"X": [p + "h"]}, "outputs": {"Out": [p + "g"]}, "attrs": {"approximate": False}},
                {"type": "matmul_v2", "inputs": {"X": [p + "g"], "Y": [p + "w2"]}, "outputs": {"Out": [p + "o"]},
                 "attrs": {"trans_x": False, "trans_y": False}},
                {"type": "c_allreduce_sum", "inputs": {"X": [p + "o"]}, "outputs": {"Out": [p + "os"]}, "attrs": {"ring_id": 0}},
                {"type": "elementwise_add", "inputs": {"X": [x], "Y": [p + "os"]}, "outputs": {"Out": ["x%d" % (l + 1)]},
                 "attrs": {"axis": -1}},
            ]
        programs.append({"rank": r, "fetch": ["x%d" % o.layers],
                         "blocks": [{"idx": 0, "parent_idx": -1, "vars": vs, "ops": ops}]})
    job = {"format": "sp-opt.program", "version": 1, "world_size": T,
           "process_groups": [{"ring_id": 0, "ranks": list(range(T))}] if T > 1 else [], "programs": programs}
    with open(o.o, 'w') as f:
        json.dump(job, f)

if __name__ == '__main__':
    main()
