#!/usr/bin/env bash
# The "must show" figures of recompute-activations (issue 26), from `sp-opt analyze` and `--stats`:
#  1. per-layer activation bytes of `gen gpt --dtype bfloat16 --tp t --sequence-parallel` after
#     fuse-allreduce-split,regather-activations (no recompute) and after it plus
#     recompute-activations (core attention), beside Korthikanti's sbh(34/t + 5as/(ht)) and sbh(34/t);
#  2. on the GPT-3 shape (h 12288, a 96, s 2048, b 1, t 8, 8 layers, default chain): FLOPs per step
#     and rank before/after core-attention recompute beside 1 + s/(6h), simulated step and peak;
#  3. policy=budget on the GPT-3 shape, six budgets from the chain's (TP+SP) peak down to the
#     full-recompute peak (policy=all) or the lowest peak the budget search reaches, whichever is
#     lower, beside policy=all and core-attention; and greedy vs exact search on a small job;
#  4. `check` (bitwise: --rtol 0 --atol 0) of every policy, tp 2 and 4, legacy and PIR, dropout on,
#     local and (when mpirun is there) mpi.
# usage: scripts/recompute-figures.sh [SP_OPT]
#   Env: S=256 B=2 H=512 A=8 TPS="2 4 8" PRESET=h100-nvlink SKIP_CHECK=1 (sections 1-3 only)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sp=${1:-$root/build/sp-opt}
export SP="$sp" S=${S:-256} B=${B:-2} H=${H:-512} A=${A:-8} TPS=${TPS:-2 4 8} PRESET=${PRESET:-h100-nvlink}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export DIR=$dir SKIP_CHECK=${SKIP_CHECK:-0}
python3 - <<'PY'
import json, os, re, shutil, subprocess
sp, d, preset = os.environ["SP"], os.environ["DIR"], os.environ["PRESET"]
S, B, H, A = (int(os.environ[k]) for k in "SBHA")
tps = [int(x) for x in os.environ["TPS"].split()]
CHAIN = "fuse-allreduce-split,regather-activations"
def run(*args, check=True):
    r = subprocess.run([sp, *args], capture_output=True, text=True)
    if check and r.returncode: raise SystemExit(f"{' '.join(args)}: exit {r.returncode}: {r.stderr[-2000:]}")
    return r
def analyze(job):
    run("analyze", job, "--preset", preset, "--format", "json", "-o", job + ".a.json")
    return json.load(open(job + ".a.json"))
def layer(rep, name="layer_1"): return next(l for l in rep["ranks"][0]["activations"]["layers"] if l["layer"] == name)
def peak(rep): return max(r["memory"]["peak_bytes"] for r in rep["ranks"])
def flops(rep): return max(r["flops"] for r in rep["ranks"])
def stat(text, name):
    m = re.search(rf"figure {name}: (\d+)", text); return int(m.group(1)) if m else 0
def gib(x): return f"{x / 2**30:.3f} GiB"

print(f"## 1. Activation bytes per layer (gen gpt --dtype bfloat16 --seq {S} --batch {B} --hidden {H} --heads {A} --layers 2 --sequence-parallel --dropout 0.1; layer_1 of rank 0)")
print(f"no recompute = {CHAIN}; recompute = {CHAIN},recompute-activations (policy=core-attention)\n")
print("| t | no recompute | sbh(34/t + 5as/(ht)) | ratio | recompute | sbh(34/t) | ratio | peak/rank before | after |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in tps:
    j = f"{d}/k{t}"
    run("gen", "gpt", "--dtype", "bfloat16", "--layers", "2", "--sequence-parallel", "--dropout", "0.1", "--seq", str(S), "--batch", str(B),
        "--hidden", str(H), "--heads", str(A), "--tp", str(t), "-o", j + ".json")
    run("rewrite", j + ".json", j + "c.json", "--passes", CHAIN)
    run("rewrite", j + "c.json", j + "r.json", "--passes", "recompute-activations")
    c, r = analyze(j + "c.json"), analyze(j + "r.json")
    full, sel = S * B * H * (34 / t + 5 * A * S / (H * t)), S * B * H * 34 / t
    print(f"| {t} | {layer(c)['bytes']:,} | {full:,.0f} | {layer(c)['bytes'] / full:.4f} | {layer(r)['bytes']:,} | {sel:,.0f} | {layer(r)['bytes'] / sel:.4f} | {peak(c):,} | {peak(r):,} |")

h3, a3, s3, t3 = 12288, 96, 2048, 8
g3 = f"{d}/g3"
print(f"\n## 2. GPT-3 shape: gen gpt --dtype bfloat16 --hidden {h3} --heads {a3} --seq {s3} --batch 1 --tp {t3} --layers 8 --sequence-parallel --dropout 0.1")
run("gen", "gpt", "--dtype", "bfloat16", "--hidden", str(h3), "--heads", str(a3), "--seq", str(s3), "--batch", "1", "--tp", str(t3),
    "--layers", "8", "--sequence-parallel", "--dropout", "0.1", "-o", g3 + ".json")
run("rewrite", g3 + ".json", g3 + "c.json")  # the default chain
pipes = {"chain": None, "chain,recompute": "sequence-parallel,recompute-activations",
         "fuse,regather,recompute,overlap": "fuse-allreduce-split,regather-activations,recompute-activations,overlap-collectives"}
reps = {"chain": analyze(g3 + "c.json")}
for name, p in pipes.items():
    if p is None: continue
    out = f"{g3}-{len(reps)}.json"
    run("rewrite", g3 + ".json", out, "--passes", p)
    reps[name] = analyze(out)
base = reps["chain"]
print(f"preset {preset}; FLOPs, peak and activations: the worst rank; 1 + s/(6h) = {1 + s3 / (6 * h3):.4f}; "
      f"one QK^T GEMM per layer over the step's FLOPs: 1 + 2bs^2h/t/flops = {1 + 8 * 2 * s3 * s3 * h3 / t3 / flops(base):.4f}\n")
print("| pipeline | FLOPs/step/rank | ratio to chain | step (sim) | peak/rank | activations/rank |")
print("|---|---:|---:|---:|---:|---:|")
for name, rep in reps.items():
    print(f"| {name} | {flops(rep):.4e} | {flops(rep) / flops(base):.4f} | {rep['summary']['step_s'] * 1e3:.3f} ms | {gib(peak(rep))} | "
          f"{gib(max(r['activations']['total_bytes'] for r in rep['ranks']))} |")

print("\n## 3. policy=budget on the GPT-3 shape (after the default chain; peak/rank and FLOPs/step/rank from analyze)\n")
def segments_on_rank0(err):
    segs = {}
    for m in re.finditer(r"rank 0 block \d+ op \d+ \([^)]*\): rewritten, note \[recomputed\]: .*? made again before op (\d+) by (.*?) \(segment", err):
        segs.setdefault(m.group(2), set()).add(m.group(1))
    return ", ".join(f"{len(v)} x {k}" for k, v in sorted(segs.items(), key=lambda kv: (-len(kv[1]), kv[0]))) or "nothing"
def policy_row(label, passes, budget=None):
    out = f"{g3}-{abs(hash(passes))}.json"
    err = run("rewrite", g3 + "c.json", out, "--passes", passes, "--explain", "--stats").stderr
    rep = analyze(out)
    extra = flops(rep) - flops(base)
    within = "" if budget is None else ("yes" if peak(rep) <= budget else "no")
    print(f"| {label} | {peak(rep):,} ({gib(peak(rep))}) | {within} | {extra:.3e} | {100 * extra / flops(base):.3f}% | {segments_on_rank0(err)} |")
    return peak(rep)
lowest = stat(run("rewrite", g3 + "c.json", g3 + "f.json", "--passes", "recompute-activations{policy=budget,budget=1}", "--stats").stderr, "peak-bytes-after")
hi = peak(base)
print("| budget | peak reached | within | extra FLOPs/rank | extra / step | recomputed on rank 0 (segments) |")
print("|---|---:|:---:|---:|---:|---|")
full = policy_row("policy=all (full recompute)", "recompute-activations{policy=all}")
core = policy_row("policy=core-attention", "recompute-activations")
lo = min(lowest, full)
for i in range(1, 7):
    budget = hi - (hi - lo) * i // 6
    policy_row(f"{budget:,}", f"recompute-activations{{policy=budget,budget={budget}}}", budget)
print(f"\nTP+SP peak {hi:,} B ({gib(hi)}); full-recompute peak (policy=all) {full:,} B ({gib(full)}); core-attention {core:,} B ({gib(core)}); "
      f"lowest peak the budget search reaches (budget=1) {lowest:,} B ({gib(lowest)}); budgets spaced from the TP+SP peak down to the lower of the last two")

print("\n## 3b. greedy vs exact (gen gpt --tp 2 --layers 2 --hidden 64 --heads 4 --seq 32 --batch 2 --sequence-parallel, after the chain)\n")
sm = f"{d}/sm"
run("gen", "gpt", "--tp", "2", "--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "32", "--batch", "2", "--sequence-parallel", "-o", sm + ".json")
run("rewrite", sm + ".json", sm + "c.json", "--passes", CHAIN)
full = run("rewrite", sm + "c.json", sm + "f.json", "--passes", "recompute-activations{policy=budget,budget=1,search=exact,exact-limit=22}", "--stats").stderr
shi, slo = stat(full, "peak-bytes-before"), stat(full, "peak-bytes-after")
print(f"peak {shi:,} B, lowest reachable {slo:,} B\n")
print("| budget | greedy FLOPs added | greedy peak | exact FLOPs added | exact peak | greedy / exact |")
print("|---:|---:|---:|---:|---:|---:|")
for i in range(1, 9):
    budget = shi - (shi - slo) * i // 8
    g = run("rewrite", sm + "c.json", sm + "g.json", "--passes", f"recompute-activations{{policy=budget,budget={budget},search=greedy}}", "--stats").stderr
    e = run("rewrite", sm + "c.json", sm + "e.json", "--passes", f"recompute-activations{{policy=budget,budget={budget},search=exact,exact-limit=22}}", "--stats").stderr
    gf, ef = stat(g, "flops-added"), stat(e, "flops-added")
    print(f"| {budget:,} | {gf:,} | {stat(g, 'peak-bytes-after'):,} | {ef:,} | {stat(e, 'peak-bytes-after'):,} | {gf / ef if ef else float('nan'):.3f} |")

if os.environ["SKIP_CHECK"] != "1":
    print("\n## 4. check, bitwise (--rtol 0 --atol 0), dropout 0.1, after fuse-allreduce-split,regather-activations\n")
    policies = {"core-attention": "recompute-activations", "budget": None, "list": "recompute-activations{policy=list,ops=softmax>dropout;gelu;layer_norm}",
                "all": "recompute-activations{policy=all}"}
    mpi = shutil.which("mpirun")
    print("| dialect | tp | policy | segments | local | mpi |")
    print("|---|---:|---|---:|---|---|")
    for dialect in ("legacy", "pir"):
        for t in (2, 4):
            j = f"{d}/c{dialect}{t}"
            run("gen", "gpt", "--tp", str(t), "--layers", "2", "--heads", "8", "--hidden", "32", "--sequence-parallel", "--dropout", "0.1",
                "--dialect", dialect, "-o", j + ".json")
            run("rewrite", j + ".json", j + "c.json", "--passes", CHAIN)
            f = run("rewrite", j + "c.json", j + "f.json", "--passes", "recompute-activations{policy=budget,budget=1}", "--stats").stderr
            policies["budget"] = f"recompute-activations{{policy=budget,budget={(stat(f, 'peak-bytes-before') + stat(f, 'peak-bytes-after')) // 2}}}"
            for name, p in policies.items():
                st = run("rewrite", j + "c.json", j + "r.json", "--passes", p, "--stats").stderr
                local = run("check", j + "c.json", j + "r.json", "--rtol", "0", "--atol", "0", check=False)
                res = [local.stdout.strip().splitlines()[-1] if local.returncode == 0 else "FAILED " + (local.stdout + local.stderr)[-200:]]
                if mpi:
                    m = subprocess.run(["timeout", "300", "mpirun", "-n", str(t), "--oversubscribe", sp, "check", j + "c.json", j + "r.json",
                                        "--rtol", "0", "--atol", "0", "--backend", "mpi"], capture_output=True, text=True)
                    res.append((m.stdout.strip().splitlines() or ["(no output)"])[-1] if m.returncode == 0 else f"FAILED (exit {m.returncode})")
                else:
                    res.append("(no mpirun)")
                print(f"| {dialect} | {t} | {name} | {stat(st, 'segments-recomputed')} | {res[0]} | {res[1]} |")
PY
