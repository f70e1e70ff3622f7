#!/usr/bin/env python3
"""Mutated jobs through every command (tests/scripts/mutated_jobs.sh).

Each case takes a valid job, applies one or two structured mutations of the kind a broken exporter
or a hand edit makes (a shape, dtype or dims_mapping changed; an arg renamed to another var, to a
dangling name or to nothing; an attr dropped or given a value of the wrong kind; an op's type
changed, an op duplicated, dropped or swapped with another; a ring id, a rank, a stream or an event
changed; a var dropped or made persistable; a fetch or a slot renamed), then runs validate,
rewrite (the default chain and a second chain with every pass and phase), analyze, check, export,
diff, graph and print on it. Whatever the job, a command must end with 0-3 (bad input is 2, with
every error line naming the file), never with a signal, a sanitizer report, an internal error or a
hang. Usage: mutated_jobs.py SP_OPT CASES SEED JOB..."""
import copy, json, os, random, shutil, subprocess, sys, tempfile

sp, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
jobs = sys.argv[4:]
rng = random.Random(seed)
tmp = tempfile.mkdtemp(prefix="spopt-mutated.")
OPTYPES = ["matmul_v2", "c_allgather", "c_reducescatter", "c_allreduce_sum", "split", "concat", "reshape2", "transpose2",
           "elementwise_add", "softmax", "layer_norm", "send_v2", "recv_v2", "c_identity", "scale", "mean", "fill_constant",
           "all_gather", "reduce_scatter", "matmul_v2_grad", "dropout", "gelu", "unknown_op_x"]

def all_ops(j):
    for p in j["programs"]:
        for b in p["blocks"]:
            for op in b["ops"]:
                yield p, b, op

def mutate(j):
    kind = rng.choice(["shape", "dtype", "argname", "attr_del", "attr_val", "optype", "dup_op", "del_op", "ring", "dims_mapping",
                       "swap_ops", "del_var", "rank", "stream", "events", "persist", "fetch", "slot_rename"])
    ps = [(p, b, op) for p, b, op in all_ops(j)]
    p, b, op = rng.choice(ps)
    if kind == "shape" and b["vars"]:
        v = rng.choice(b["vars"])
        if v.get("shape"):
            i = rng.randrange(len(v["shape"])); v["shape"][i] = rng.choice([0, -1, 1, 3, v["shape"][i] * 2, 2**40])
        else:
            v["shape"] = [rng.choice([1, 2, 7])]
    elif kind == "dtype" and b["vars"]:
        rng.choice(b["vars"])["dtype"] = rng.choice(["float16", "int64", "bool", "float64", "int8", "complex64"])
    elif kind == "argname":
        slots = [s for s in ("inputs", "outputs") if op.get(s)]
        if slots:
            s = rng.choice(slots); k = rng.choice(list(op[s]))
            if op[s][k]:
                i = rng.randrange(len(op[s][k])); other = rng.choice(b["vars"])["name"] if b["vars"] else "nope"
                op[s][k][i] = rng.choice([other, "dangling_var", ""])
    elif kind == "attr_del" and op.get("attrs"):
        del op["attrs"][rng.choice(list(op["attrs"]))]
    elif kind == "attr_val" and op.get("attrs"):
        k = rng.choice(list(op["attrs"])); op["attrs"][k] = rng.choice([-1, 0, 7, 2**62, "x", [], [1, 2], True, None, 1.5, {"a": 1}])
    elif kind == "optype":
        op["type"] = rng.choice(OPTYPES)
    elif kind == "dup_op":
        b["ops"].insert(rng.randrange(len(b["ops"]) + 1), copy.deepcopy(op))
    elif kind == "del_op":
        b["ops"].remove(op)
    elif kind == "ring":
        op.setdefault("attrs", {})["ring_id"] = rng.choice([0, 1, 5, -3])
    elif kind == "dims_mapping" and b["vars"]:
        v = rng.choice(b["vars"]); v.setdefault("dist_attr", {})["dims_mapping"] = [rng.choice([-1, 0, 1, 3]) for _ in v.get("shape", [1])]
    elif kind == "swap_ops" and len(b["ops"]) > 1:
        i, k = rng.randrange(len(b["ops"])), rng.randrange(len(b["ops"])); b["ops"][i], b["ops"][k] = b["ops"][k], b["ops"][i]
    elif kind == "del_var" and b["vars"]:
        b["vars"].remove(rng.choice(b["vars"]))
    elif kind == "rank":
        p["rank"] = rng.choice([0, 1, 3, 99, -1])
    elif kind == "stream":
        op.setdefault("dist_attr", {})["execution_stream"] = rng.choice(["comm", "s1", "", 5])
    elif kind == "events":
        d = op.setdefault("dist_attr", {}); d["events_to_wait"] = rng.choice([["e1"], ["nope"], "e", [1]])
        if rng.random() < 0.5: rng.choice(ps)[2].setdefault("dist_attr", {})["event_to_record"] = "e1"
    elif kind == "persist" and b["vars"]:
        v = rng.choice(b["vars"]); v["persistable"] = not v.get("persistable", False)
    elif kind == "fetch":
        p["fetch"] = rng.choice([[], ["nope"], [rng.choice(b["vars"])["name"]] if b["vars"] else []])
    elif kind == "slot_rename":
        slots = [s for s in ("inputs", "outputs") if op.get(s)]
        if slots:
            s = rng.choice(slots); k = rng.choice(list(op[s])); op[s]["Zz" + k] = op[s].pop(k)
    return kind

def run(args, timeout=120):
    try:
        r = subprocess.run([sp] + args, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""

findings = 0
for i in range(n):
    src = rng.choice(jobs)
    j = json.load(open(src))
    kinds = [mutate(j) for _ in range(rng.choice([1, 1, 2]))]
    path = f"{tmp}/in.json"
    json.dump(j, open(path, "w"))
    cmds = [["validate", path], ["rewrite", path, f"{tmp}/out.json"], ["analyze", path], ["check", path, path],
            ["rewrite", path, f"{tmp}/out2.json", "--preset", "a100-nvlink", "--passes=fuse-allreduce-split,regather-activations,recompute-activations,decompose-collective-matmul{phases=all},overlap-collectives{split-min-ns=0,phases=all}"],
            ["export", path, "--to", "pdmodel", "-o", f"{tmp}/exp/"], ["diff", path, path], ["graph", path, "--format", "dot", "-o", f"{tmp}/g.dot"], ["print", path]]
    for c in cmds:
        rc, err = run(c)
        bad = rc not in (0, 1, 2, 3) or "internal error" in err or "Sanitizer" in err or "runtime error" in err
        lines = [l for l in err.strip().splitlines() if l.strip() and not l.startswith("note: ")]
        if rc == 2 and lines:
            # every error line names the file (validate lists several problems, one per line)
            bad = bad or not all(l.startswith((path, "sp-opt", tmp, "  ")) for l in lines)
        if bad:
            findings += 1
            print(f"FAIL case {i} (seed {seed}, mutations {kinds}, source {os.path.basename(src)}): {' '.join(c)} -> "
                  f"{rc}: {err.strip()[:600]}", flush=True)
            break
shutil.rmtree(tmp, ignore_errors=True)
print(f"mutated jobs: {n} cases (seed {seed}) through {len(cmds)} commands each, {findings} failing")
sys.exit(1 if findings else 0)
