#!/usr/bin/env python3
"""Compares two replays of the same model generated with different parallel layouts.

usage: gen_compare_dumps.py REF_JOB REF_DUMP JOB DUMP [--rtol R] [--atol A]

Each dump is what `sp-opt replay JOB --dump DIR` writes: DIR/rankR/VAR.npy. For every persistable
var (the parameters after the sgd step) the global tensor is put together from the ranks' blocks
(dims_mapping over process_mesh: format.md, and the input rule of replay), checking on the way
that replicas agree; the two jobs' global tensors must then agree to the tolerance.
The fetched loss is each rank's share of the model's loss (gen's README): the model's loss is the
sum over the ranks that hold distinct shards of the input.
Pure Python (no numpy needed). Exit 0 when all agree, 1 otherwise.
"""
import array, ast, json, math, os, struct, sys

def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise SystemExit(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["fortran_order"]:
        raise SystemExit(f"{path}: Fortran order is not supported")
    codes = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i", "|u1": "B", "|b1": "B"}
    if header["descr"] not in codes:
        raise SystemExit(f"{path}: dtype {header['descr']} is not supported")
    values = array.array(codes[header["descr"]])
    values.frombytes(data[start + hlen:])
    return list(header["shape"]), [float(v) for v in values]

def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n

def layout(var, rank):
    """Global shape and this rank's offset in it (the rule of lib/runtime/inputs.h)."""
    shape = var["shape"]
    dist = var.get("dist_attr") or {}
    mapping = dist.get("dims_mapping") or [-1] * len(shape)
    if all(m < 0 for m in mapping):
        return list(shape), [0] * len(shape)
    mesh = dist["process_mesh"]
    index = mesh["process_ids"].index(rank)
    coord = []
    for extent in reversed(mesh["shape"]):
        coord.append(index % extent)
        index //= extent
    coord.reverse()
    glob = [d * (mesh["shape"][m] if m >= 0 else 1) for d, m in zip(shape, mapping)]
    offset = [coord[m] * d if m >= 0 else 0 for d, m in zip(shape, mapping)]
    return glob, offset

def rank_vars(job):
    """rank -> {name: var} of the first block."""
    return {p["rank"]: {v["name"]: v for v in p["blocks"][0]["vars"]} for p in job["programs"]}

def npy_path(dump, rank, name):
    return os.path.join(dump, f"rank{rank}", name.replace("/", "%2F") + ".npy")

def assemble(job_vars, dump, name, problems, label):
    """The global tensor of a var from every rank's block; replicas must agree."""
    glob = None
    values = None
    filled = None
    for rank, vars_ in sorted(job_vars.items()):
        var = vars_[name]
        shape, local = read_npy(npy_path(dump, rank, name))
        if shape != var["shape"] and not (shape == [] and var["shape"] == [1]):
            problems.append(f"{label}: rank {rank} dumped {name} with shape {shape}, declared {var['shape']}")
            return None, None
        g, off = layout(var, rank)
        if glob is None:
            glob, values, filled = g, [0.0] * numel(g), [False] * numel(g)
        strides = [1] * len(g)
        for k in range(len(g) - 2, -1, -1):
            strides[k] = strides[k + 1] * g[k + 1]
        lshape = var["shape"]
        for li, v in enumerate(local):
            rem, gi = li, 0
            for k in range(len(lshape) - 1, -1, -1):
                idx = rem % lshape[k]
                rem //= lshape[k]
                gi += (idx + off[k]) * strides[k]
            if filled[gi]:
                if v != values[gi] and abs(v - values[gi]) > 1e-6 * max(1.0, abs(v)):
                    problems.append(f"{label}: replicas of {name} differ at global element {gi}: {values[gi]} vs {v} (rank {rank})")
                    return None, None
            else:
                values[gi], filled[gi] = v, True
    if not all(filled):
        problems.append(f"{label}: {name} is not covered by the ranks' blocks")
        return None, None
    return glob, values

def model_loss(job, dump):
    """Sum of the fetched loss over ranks holding distinct shards of the input."""
    vars_ = rank_vars(job)
    seen, total = set(), 0.0
    for p in job["programs"]:
        rank = p["rank"]
        shard = tuple(layout(vars_[rank]["input"], rank)[1])
        if shard in seen:
            continue
        seen.add(shard)
        _, v = read_npy(npy_path(dump, rank, p["fetch"][0]))
        total += v[0]
    return total

def main():
    args = sys.argv[1:]
    rtol, atol = 1e-4, 1e-5
    if "--rtol" in args:
        i = args.index("--rtol"); rtol = float(args[i + 1]); del args[i:i + 2]
    if "--atol" in args:
        i = args.index("--atol"); atol = float(args[i + 1]); del args[i:i + 2]
    ref_job_path, ref_dump, job_path, dump = args
    with open(ref_job_path) as f:
        ref_job = json.load(f)
    with open(job_path) as f:
        job = json.load(f)
    problems = []
    ref_loss, loss = model_loss(ref_job, ref_dump), model_loss(job, dump)
    if not math.isclose(loss, ref_loss, rel_tol=rtol, abs_tol=atol * 100):
        problems.append(f"loss {loss!r} differs from the reference {ref_loss!r}")
    ref_vars, vars_ = rank_vars(ref_job), rank_vars(job)
    params = sorted(n for n, v in ref_vars[0].items() if v.get("persistable"))
    if params != sorted(n for n, v in vars_[0].items() if v.get("persistable")):
        problems.append("the two jobs have different persistable vars")
    worst = (0.0, "")
    for name in params:
        g_ref, ref = assemble(ref_vars, ref_dump, name, problems, "reference")
        g, got = assemble(vars_, dump, name, problems, "job")
        if ref is None or got is None:
            continue
        if g != g_ref:
            problems.append(f"{name}: global shape {g} differs from the reference {g_ref}")
            continue
        for i, (a, b) in enumerate(zip(got, ref)):
            err = abs(a - b)
            if err > worst[0]:
                worst = (err, f"{name}[{i}]")
            if err > atol + rtol * abs(b):
                problems.append(f"{name}: element {i} is {a!r}, reference {b!r}")
                break
    print(f"loss {loss:.7g} (reference {ref_loss:.7g}); {len(params)} persistable vars; "
          f"largest difference {worst[0]:.3g} at {worst[1] or '-'}")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
