#!/usr/bin/env python3
# Writes the overlap-text-* golden inputs: python3 scripts/make-overlap-cases.py testdata/golden
import os, sys
root = sys.argv[1]

def job(comment, groups, body_fn, ranks=2):
    out = ["sp-opt.program text 1"] + ["// " + c for c in comment] + [f"world_size {ranks}"]
    for rid, rs in groups:
        out.append(f"group ring_id={rid} ranks=[{','.join(map(str, rs))}]")
    out.append("")
    for r in range(ranks):
        vars_, ops, fetch = body_fn(r)
        out.append(f"rank {r} fetch=[{','.join(fetch)}] {{")
        out.append("  block 0 parent=-1 {")
        for v in vars_:
            out.append("    var " + v)
        for o in ops:
            out.append("    " + o)
        out.append("  }")
        out.append("}")
        out.append("")
    return "\n".join(out)

def write(name, text):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "in.sptxt"), "w").write(text)

MM = "{trans_x=false, trans_y=false, op_role=1}"
# Column-parallel linear y = x w (w split by columns): backward all-reduces the partial input grad.
def column(r):
    v = ["x : float32[4096,4096]", "w : float32[4096,2048] persistable", "lr : float32[1] persistable",
         "dy : float32[4096,2048]", "dx_part : float32[4096,4096]", "dx : float32[4096,4096]",
         "dw : float32[4096,2048]", "dz : float32[4096,4096]"]
    o = ["{X@GRAD=[dx_part], Y@GRAD=[dw]} = matmul_v2_grad(X=[x], Y=[w], Out@GRAD=[dy]) " + MM,
         "{Out=[dx]} = c_allreduce_sum(X=[dx_part]) {ring_id=0, op_role=1}",
         "{X@GRAD=[dz]} = relu_grad(Out=[x], Out@GRAD=[dx]) {op_role=1}",
         "{ParamOut=[w]} = sgd(Param=[w], Grad=[dw], LearningRate=[lr]) {op_role=2}"]
    return v, o, ["dz"]
write("overlap-text-column-linear", job([
    "Backward of a column-parallel linear (Megatron's f/g: the input gradient is all-reduced over",
    "the tensor-parallel ring), as the framework emits it: one matmul_v2_grad, then the all-reduce."],
    [(0, [0, 1])], column))

# Row-parallel linear with sequence parallelism: backward all-gathers the output-grad shards.
def row(r):
    v = ["h : float32[4096,2048]", "w : float32[2048,4096] persistable", "lr : float32[1] persistable",
         "u : float32[4096,4096]", "du : float32[4096,4096]", "du2 : float32[4096,4096]",
         "dy_shard : float32[2048,4096]", "dy : float32[4096,4096]",
         "dh : float32[4096,2048]", "dw : float32[2048,4096]"]
    o = ["{X@GRAD=[du2]} = relu_grad(Out=[u], Out@GRAD=[du]) {op_role=1}",
         "{Out=[dy]} = c_allgather(X=[dy_shard]) {ring_id=0, nranks=2, op_role=1}",
         "{X@GRAD=[dh], Y@GRAD=[dw]} = matmul_v2_grad(X=[h], Y=[w], Out@GRAD=[dy]) " + MM,
         "{ParamOut=[w]} = sgd(Param=[w], Grad=[dw], LearningRate=[lr]) {op_role=2}"]
    return v, o, ["dh", "du2"]
write("overlap-text-row-linear", job([
    "Backward of a row-parallel linear under sequence parallelism: the output gradient's sequence",
    "shards are all-gathered before the GEMMs. An unrelated gradient op comes first in the input."],
    [(0, [0, 1])], row))

# Data parallel: in-place all-reduce of a parameter gradient, then sgd.
def inplace(r):
    v = ["x : float32[4096,4096]", "w : float32[4096,4096] persistable", "lr : float32[1] persistable",
         "dy : float32[4096,4096]", "dx : float32[4096,4096]", "dw : float32[4096,4096]",
         "gnorm : float32[4096,4096]", "dz : float32[4096,4096]"]
    o = ["{X@GRAD=[dx], Y@GRAD=[dw]} = matmul_v2_grad(X=[x], Y=[w], Out@GRAD=[dy]) " + MM,
         "{Out=[gnorm]} = scale(X=[dw]) {scale=1.0, bias=0.0, bias_after_scale=true, op_role=1}",
         "{Out=[dw]} = c_allreduce_sum(X=[dw]) {ring_id=1, op_role=1}",
         "{X@GRAD=[dz]} = relu_grad(Out=[x], Out@GRAD=[dx]) {op_role=1}",
         "{ParamOut=[w]} = sgd(Param=[w], Grad=[dw], LearningRate=[lr]) {op_role=2}"]
    return v, o, ["dz", "gnorm"]
write("overlap-text-inplace-sgd", job([
    "Data parallel: the weight gradient is all-reduced in place (Out is X) and read by sgd; an op",
    "reads the unreduced gradient before the all-reduce overwrites it."],
    [(1, [0, 1])], inplace))

# Two rings: tensor parallel (ring 0) and data parallel (ring 1) on the same two ranks.
def two(r):
    v = ["x : float32[4096,4096]", "w : float32[4096,2048] persistable", "lr : float32[1] persistable",
         "dy : float32[4096,2048]", "dx_part : float32[4096,4096]", "dx : float32[4096,4096]",
         "dw : float32[4096,2048]", "dz : float32[4096,4096]"]
    o = ["{X@GRAD=[dx_part], Y@GRAD=[dw]} = matmul_v2_grad(X=[x], Y=[w], Out@GRAD=[dy]) " + MM,
         "{Out=[dw]} = c_allreduce_sum(X=[dw]) {ring_id=1, op_role=1}",
         "{Out=[dx]} = c_allreduce_sum(X=[dx_part]) {ring_id=0, op_role=1}",
         "{X@GRAD=[dz]} = relu_grad(Out=[x], Out@GRAD=[dx]) {op_role=1}",
         "{ParamOut=[w]} = sgd(Param=[w], Grad=[dw], LearningRate=[lr]) {op_role=2}"]
    return v, o, ["dz"]
write("overlap-text-two-rings", job([
    "Two rings on the same ranks: the input gradient is all-reduced on the tensor-parallel ring 0,",
    "the weight gradient in place on the data-parallel ring 1."],
    [(0, [0, 1]), (1, [0, 1])], two))

# Nothing to overlap: no collective at all.
def nothing(r):
    v = ["x : float32[64,64]", "w : float32[64,64] persistable", "dy : float32[64,64]",
         "dx : float32[64,64]", "dw : float32[64,64]"]
    o = ["{X@GRAD=[dx], Y@GRAD=[dw]} = matmul_v2_grad(X=[x], Y=[w], Out@GRAD=[dy]) " + MM]
    return v, o, ["dx", "dw"]
write("overlap-text-nothing", job(["A backward with no collective: nothing to hide, the pass changes nothing."],
    [(0, [0, 1])], nothing))

# Ring order: collective #1 of ring 0 is ready first, but #0 must issue before it on every rank.
def ringorder(r):
    v = ["x : float32[4096,4096]", "w : float32[4096,4096] persistable", "dy : float32[4096,4096]",
         "a : float32[4096,4096]", "a_sum : float32[4096,4096]",
         "b : float32[4096,4096]", "b_sum : float32[4096,4096]", "db : float32[4096,4096]",
         "da : float32[4096,4096]"]
    o = ["{Out=[a]} = matmul_v2(X=[x], Y=[w]) " + MM,
         "{Out=[a_sum]} = c_allreduce_sum(X=[a]) {ring_id=0, op_role=1}",
         "{Out=[b_sum]} = c_allreduce_sum(X=[b]) {ring_id=0, op_role=1}",
         "{X@GRAD=[db]} = relu_grad(Out=[b], Out@GRAD=[b_sum]) {op_role=1}",
         "{X@GRAD=[da]} = relu_grad(Out=[x], Out@GRAD=[a_sum]) {op_role=1}"]
    return v, o, ["da", "db"]
write("overlap-text-ring-order", job([
    "Collective #1 of ring 0 (b) has its input from the start; #0 (a) waits for a GEMM. Issuing b",
    "first would hide it, but would change the ring's order: the pass keeps it and says so."],
    [(0, [0, 1])], ringorder))
