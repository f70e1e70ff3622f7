#!/usr/bin/env bash
# End-to-end check of hand-written backward programs: each job below, in float64, replays the
# grads of its inputs, and central finite differences of its loss, each from a replay with one
# input element moved by +-h (--inputs), must agree. The Llama block (testdata/jobs/llama_block.sptxt)
# has every grad kernel of the block on x's path; index_ops.sptxt the shape and index ops' grads.
# Usage: jobs_grad_fd.sh SP_OPT SOURCE_DIR
set -euo pipefail
sp_opt=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$sp_opt" "$src" "$work" <<'PY'
import ast, os, re, struct, subprocess, sys
sp_opt, src, work = sys.argv[1:4]

def read_npy(path):
    data = open(path, "rb").read()
    hlen = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + hlen].decode())
    assert header["descr"] == "<f8" and not header["fortran_order"], header
    body = data[10 + hlen:]
    return header["shape"], list(struct.unpack("<%dd" % (len(body) // 8), body))

def write_npy(path, shape, values):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }" % "".join("%d," % d for d in shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%dd" % len(values), *values))

def replay(job, out, inputs=None):
    cmd = [sp_opt, "replay", job, "--dump", out] + (["--inputs", inputs] if inputs else [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)

def check(name, inputs):
    text = open(os.path.join(src, "testdata/jobs", name)).read()
    # float64 throughout (fill_constant's dtype 5 is float32, 6 float64); the inputs fetched too
    text = text.replace("float32", "float64").replace("dtype=5,", "dtype=6,")
    text = re.sub(r"fetch=\[([^\]]*)\]", lambda m: "fetch=[%s, %s]" % (m.group(1), ", ".join(inputs)), text, count=1)
    job = os.path.join(work, name)
    open(job, "w").write(text)
    base = os.path.join(work, name + ".base")
    replay(job, base)
    for var in inputs:
        shape, x = read_npy(os.path.join(base, "rank0", var + ".npy"))
        _, dx = read_npy(os.path.join(base, "rank0", var + "@GRAD.npy"))
        h, worst, picks = 1e-5, 0.0, range(0, len(x), max(1, len(x) // 6))
        for i in picks:
            loss = []
            for sign in (1, -1):
                d = os.path.join(work, "%s.%s.%d.%d" % (name, var, i, sign))
                os.makedirs(d)
                moved = list(x)
                moved[i] += sign * h
                write_npy(os.path.join(d, var + ".npy"), shape, moved)
                replay(job, d + "/out", d)
                loss.append(read_npy(d + "/out/rank0/loss.npy")[1][0])
            fd = (loss[0] - loss[1]) / (2 * h)
            err = abs(fd - dx[i]) / (1e-3 + abs(fd))
            worst = max(worst, err)
            if err > 1e-5:
                sys.exit("%s: %s@GRAD[%d] = %.10g but the finite difference is %.10g" % (name, var, i, dx[i], fd))
        print("%s: %s@GRAD matches finite differences at %d elements (worst relative error %.2g)" % (name, var, len(picks), worst))

check("llama_block.sptxt", ["x"])
check("index_ops.sptxt", ["a", "b", "x", "t"])
PY
